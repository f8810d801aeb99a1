#include "kv/f32_attention.h"

#include "ops/dot.h"  // first: see the note on GCC bug 105593

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/status.h"
#include "ops/activation.h"


namespace kvaudit {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// y += a * x, one fma per element (acc = fma(p_t, v_t[d], acc) in ascending t across calls).
#if defined(__AVX512F__)
inline void Axpy(float a, const float* x, float* y, int n) {
  const __m512 va = _mm512_set1_ps(a);
  int i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = TailMask16(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}
#else
inline void Axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}
#endif

// o_j [hd] += Σ_i p[j·p_stride + i] · v_i for heads j < G over rows v [len, hd]: Axpy's arithmetic
// per element (fma in ascending i), with the loops turned inside out so up to 4 heads × 64 floats
// of o stay in registers across the chunk (12-16 independent fma chains instead of
// load-fma-store per key).
inline void WeightedRows(const float* p, int p_stride, int G, const float* v, int len, int hd, float* o) {
#if defined(__AVX512F__)
  for (int j0 = 0; j0 < G; j0 += 4) {
    const int nj = std::min(4, G - j0);
    for (int d0 = 0; d0 < hd; d0 += 64) {
      __mmask16 mk[4];
      for (int u = 0; u < 4; ++u) {
        const int left = std::clamp(hd - d0 - 16 * u, 0, 16);
        mk[u] = left == 16 ? static_cast<__mmask16>(0xFFFF) : TailMask16(left);
      }
      __m512 acc[4][4];
      for (int j = 0; j < 4; ++j) {
        for (int u = 0; u < 4; ++u) acc[j][u] = j < nj ? _mm512_maskz_loadu_ps(mk[u], o + (j0 + j) * hd + d0 + 16 * u) : _mm512_setzero_ps();
      }
      for (int i = 0; i < len; ++i) {
        __m512 vv[4];
        for (int u = 0; u < 4; ++u) vv[u] = _mm512_maskz_loadu_ps(mk[u], v + static_cast<int64_t>(i) * hd + d0 + 16 * u);
        for (int j = 0; j < nj; ++j) {
          const __m512 pj = _mm512_set1_ps(p[(j0 + j) * p_stride + i]);
          for (int u = 0; u < 4; ++u) acc[j][u] = _mm512_fmadd_ps(pj, vv[u], acc[j][u]);
        }
      }
      for (int j = 0; j < nj; ++j) {
        for (int u = 0; u < 4; ++u) _mm512_mask_storeu_ps(o + (j0 + j) * hd + d0 + 16 * u, mk[u], acc[j][u]);
      }
    }
  }
#else
  for (int i = 0; i < len; ++i) {
    for (int j = 0; j < G; ++j) Axpy(p[j * p_stride + i], v + static_cast<int64_t>(i) * hd, o + j * hd, hd);
  }
#endif
}
}  // namespace

void AttendChunk(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, int k0,
                 int k1, float* o, PartialRow* part, float* scores) {
  const int hd = s.head_dim, G = s.group, rows = n_tok * G;
  std::memset(o, 0, sizeof(float) * rows * hd);
  for (int r = 0; r < rows; ++r) {
    const int p = pos0 + r / G;
    const int lo = std::max(FirstKey(s, p), k0), hi = std::min(p, k1 - 1);
    if (lo > hi) {
      part[r] = {kNegInf, 0.0f};
      continue;
    }
    const float* q = qs + static_cast<int64_t>(r) * hd;
    const int len = hi - lo + 1;
    for (int j = 0; j < len; ++j) scores[j] = DotF32(q, k + static_cast<int64_t>(lo + j) * hd, hd);
    const float mx = MaxOf(scores, len);
    const float sum = ExpSubSum(scores, len, mx);
    float* orow = o + static_cast<int64_t>(r) * hd;
    for (int j = 0; j < len; ++j) Axpy(scores[j], v + static_cast<int64_t>(lo + j) * hd, orow, hd);
    part[r] = {mx, sum};
  }
}

void AttendChunkGrouped(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v,
                        int k0, int k1, float* o, PartialRow* part, float* scores) {
  constexpr int kMaxGroup = 64;  // query heads per KV head; real models use <= 16
  const int hd = s.head_dim, G = s.group, n_keys = k1 - k0;
  KV_CHECK(G <= kMaxGroup);
  std::memset(o, 0, sizeof(float) * n_tok * G * hd);
  for (int t = 0; t < n_tok; ++t) {  // rows t*G .. t*G+G-1 share position p, hence lo and hi
    const int p = pos0 + t, r0 = t * G;
    const int lo = std::max(FirstKey(s, p), k0), hi = std::min(p, k1 - 1);
    if (lo > hi) {
      for (int j = 0; j < G; ++j) part[r0 + j] = {kNegInf, 0.0f};
      continue;
    }
    const int len = hi - lo + 1;
    const float* q = qs + static_cast<int64_t>(r0) * hd;
    for (int i = 0; i < len; i += 16) {  // 16 keys (L1-resident) against every head of the group
      const int m = std::min(16, len - i);
      for (int j = 0; j < G; ++j) {
        DotRowsF32(q + j * hd, k + static_cast<int64_t>(lo + i) * hd, hd, m, hd, scores + j * n_keys + i);
      }
    }
    float mx[kMaxGroup], sum[kMaxGroup];
    for (int j = 0; j < G; ++j) {
      mx[j] = MaxOf(scores + j * n_keys, len);
      sum[j] = ExpSubSum(scores + j * n_keys, len, mx[j]);
    }
    WeightedRows(scores, n_keys, G, v + static_cast<int64_t>(lo) * hd, len, hd, o + static_cast<int64_t>(r0) * hd);
    for (int j = 0; j < G; ++j) part[r0 + j] = {mx[j], sum[j]};
  }
}

void AttendRef(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, float* o) {
  const int hd = s.head_dim, G = s.group, rows = n_tok * G;
  std::vector<double> w;
  for (int r = 0; r < rows; ++r) {
    const int p = pos0 + r / G, lo = FirstKey(s, p);
    const float* q = qs + static_cast<int64_t>(r) * hd;
    w.assign(p - lo + 1, 0.0);
    double mx = -1e300;
    for (int j = lo; j <= p; ++j) {
      double d = 0;
      for (int c = 0; c < hd; ++c) d += static_cast<double>(q[c]) * k[static_cast<int64_t>(j) * hd + c];
      w[j - lo] = d;
      mx = std::max(mx, d);
    }
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    for (int c = 0; c < hd; ++c) {
      double acc = 0;
      for (int j = lo; j <= p; ++j) acc += w[j - lo] * v[static_cast<int64_t>(j) * hd + c];
      o[static_cast<int64_t>(r) * hd + c] = static_cast<float>(acc / sum);
    }
  }
}

}  // namespace kvaudit
