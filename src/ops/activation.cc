#ifndef KVAUDIT_ISA_PASS
#include "ops/activation.h"

#include "ops/dot.h"  // first: see the note on GCC bug 105593

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/half.h"

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

namespace {
// exp(x) = 2^k · exp(r), k = round(x·log2 e), r = x − k·ln2 (ln2 split hi/lo, Cody–Waite), exp(r)
// by a degree-6 minimax polynomial on [−ln2/2, ln2/2] (the Cephes expf coefficients), 2^k applied
// last (vscalefps / ldexp: underflow to 0 and overflow to inf without integer tricks).
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpLo = -104.0f;  // exp underflows to 0 well before this
constexpr float kExpHi = 89.0f;    // and overflows to inf after 88.72
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

#include "ops/activation_twins.inl.h"
}  // namespace

void ExpScalar(const float* x, float* y, int64_t n) { ExpTwin(x, y, n); }
void SiluMulScalar(const float* gate, const float* up, float* out, int64_t n) { SiluMulTwin(gate, up, out, n); }
float MaxOfScalar(const float* x, int64_t n) { return MaxOfTwin(x, n); }
float ExpSubSumScalar(float* x, int64_t n, float mx) { return ExpSubSumTwin(x, n, mx); }

}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "ops/activation.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
void Exp(const float* x, float* y, int64_t n) { KVAUDIT_DISPATCH(Exp, x, y, n); }
void SiluMul(const float* gate, const float* up, float* out, int64_t n) { KVAUDIT_DISPATCH(SiluMul, gate, up, out, n); }
float MaxOf(const float* x, int64_t n) { KVAUDIT_DISPATCH(MaxOf, x, n); }
float ExpSubSum(float* x, int64_t n, float mx) { KVAUDIT_DISPATCH(ExpSubSum, x, n, mx); }

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float sum = ExpSubSum(x, n, MaxOf(x, n));
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"

#if defined(KVAUDIT_ISA_AVX512)
namespace {
inline __m512 Exp16(__m512 x) {  // the arithmetic Exp1 spells out
  x = _mm512_max_ps(x, _mm512_set1_ps(kExpLo));
  x = _mm512_min_ps(x, _mm512_set1_ps(kExpHi));
  const __m512 k =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP[i]));
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
#elif defined(KVAUDIT_ISA_AVX2)
namespace {
#include "ops/activation_twins.inl.h"  // this path's own copy of the twins (the FMA instruction)
#include "ops/activation_avx2.inl.h"
}  // namespace
void Exp(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Exp8(_mm256_loadu_ps(x + i)));
  ExpTwin(x + i, y + i, n - i);
}
void SiluMul(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  SiluMulTwin(gate + i, up + i, out + i, n - i);
}
float MaxOf(const float* x, int64_t n) { return MaxOf16Lanes(x, n); }
float ExpSubSum(float* x, int64_t n, float mx) { return ExpSubSum16Lanes(x, n, mx); }
#else
namespace {
#include "ops/activation_twins.inl.h"  // this path's own copy of the twins
}  // namespace
void Exp(const float* x, float* y, int64_t n) { ExpTwin(x, y, n); }
void SiluMul(const float* gate, const float* up, float* out, int64_t n) { SiluMulTwin(gate, up, out, n); }
float MaxOf(const float* x, int64_t n) { return MaxOfTwin(x, n); }
float ExpSubSum(float* x, int64_t n, float mx) { return ExpSubSumTwin(x, n, mx); }
#endif
#endif  // KVAUDIT_ISA_PASS
