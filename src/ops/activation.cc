#include "ops/activation.h"

#include "ops/dot.h"  // first: see the note on GCC bug 105593

#include <algorithm>
#include <cmath>
#include <limits>


namespace kvaudit {

void ExpRef(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void SiluMulRef(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void SoftmaxRef(float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

#if defined(__AVX512F__)
namespace {
// exp(x) = 2^k · exp(r), k = round(x·log2 e), r = x − k·ln2 (ln2 split hi/lo, Cody–Waite), exp(r)
// by a degree-6 minimax polynomial on [−ln2/2, ln2/2] (the Cephes expf coefficients); 2^k applied
// with vscalefps, which handles underflow to 0 and overflow to inf without integer tricks.
inline __m512 Exp16(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f);
  const __m512 ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));  // exp underflows to 0 well before this
  x = _mm512_min_ps(x, _mm512_set1_ps(89.0f));    // and overflows to inf after 88.72
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, ln2_hi, x);
  r = _mm512_fnmadd_ps(k, ln2_lo, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, k);
}

inline __mmask16 TailMask(int64_t left) { return static_cast<__mmask16>((1u << left) - 1); }
}  // namespace

void Exp(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Exp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m, Exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void SiluMul(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  auto step = [&](__m512 g, __m512 u) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), u);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, step(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(out + i, m, step(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

float MaxOf(const float* x, int64_t n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
  if (i < n) m = _mm512_mask_max_ps(m, TailMask(n - i), m, _mm512_maskz_loadu_ps(TailMask(n - i), x + i));
  return _mm512_reduce_max_ps(m);
}

float ExpSubSum(float* x, int64_t n, float mx) {
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 s = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(x + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm)));
    _mm512_mask_storeu_ps(x + i, m, e);
    s = _mm512_add_ps(s, e);
  }
  return ReduceAdd16(s);  // the canonical tree (ops/dot.h): a fixed order on every build
}
#else
void Exp(const float* x, float* y, int64_t n) { ExpRef(x, y, n); }
void SiluMul(const float* gate, const float* up, float* out, int64_t n) { SiluMulRef(gate, up, out, n); }
float MaxOf(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
float ExpSubSum(float* x, int64_t n, float mx) {
  float lanes[16] = {};  // the SIMD version's 16 lane sums and tree
  for (int64_t i = 0; i < n; ++i) lanes[i % 16] += (x[i] = std::exp(x[i] - mx));
  return ReduceLanesRef(lanes);
}
#endif

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float sum = ExpSubSum(x, n, MaxOf(x, n));
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace kvaudit
