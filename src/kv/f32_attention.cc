#include "kv/f32_attention.h"

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include <cblas.h>

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

#if defined(__AVX512F__)
inline float Dot(const float* a, const float* b, int n) {
  __m512 acc = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return _mm512_reduce_add_ps(acc);
}
// y += a * x
inline void Axpy(float a, const float* x, float* y, int n) {
  const __m512 va = _mm512_set1_ps(a);
  int i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}
#else
inline float Dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}
inline void Axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}
#endif
}  // namespace

int64_t TileScratchFloats(int n_tok, const AttnShape& s) {
  const int64_t rows = static_cast<int64_t>(n_tok) * s.group;
  return rows * kKeyTile + 2 * rows;
}

void AttendTile(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, float* o,
                float* scratch) {
  const int hd = s.head_dim, G = s.group, rows = n_tok * G;
  float* S = scratch;                                        // [rows, kKeyTile] scores, then probabilities
  float* m = scratch + static_cast<int64_t>(rows) * kKeyTile;  // [rows] running max
  float* l = m + rows;                                         // [rows] running sum
  std::fill(m, m + rows, kNegInf);
  std::fill(l, l + rows, 0.0f);
  std::memset(o, 0, sizeof(float) * rows * hd);
  const int k_begin = FirstKey(s, pos0), k_end = pos0 + n_tok;  // keys [k_begin, k_end)
  for (int k0 = k_begin; k0 < k_end; k0 += kKeyTile) {
    const int kt = std::min(kKeyTile, k_end - k0);
    // S = Qs · K[k0:k0+kt]ᵀ  [rows, kt]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kt, hd, 1.0f, qs, hd, k + static_cast<int64_t>(k0) * hd,
                hd, 0.0f, S, kKeyTile);
    for (int r = 0; r < rows; ++r) {
      const int p = pos0 + r / G;
      const int lo = std::max(FirstKey(s, p), k0), hi = std::min(p, k0 + kt - 1);
      float* sr = S + static_cast<int64_t>(r) * kKeyTile;
      if (lo > hi) {  // this row sees no key of the tile (causal or window): contributes nothing
        std::memset(sr, 0, sizeof(float) * kt);
        continue;
      }
      const float m_new = std::max(m[r], MaxOf(sr + (lo - k0), hi - lo + 1));
      const float sum = ExpSubSum(sr + (lo - k0), hi - lo + 1, m_new);
      if (lo > k0) std::memset(sr, 0, sizeof(float) * (lo - k0));
      if (hi < k0 + kt - 1) std::memset(sr + (hi - k0 + 1), 0, sizeof(float) * (k0 + kt - 1 - hi));
      if (m[r] != m_new) {  // rescale what earlier tiles accumulated (online softmax)
        const float corr = std::exp(m[r] - m_new);
        l[r] *= corr;
        float* orow = o + static_cast<int64_t>(r) * hd;
        for (int d = 0; d < hd; ++d) orow[d] *= corr;
      }
      l[r] += sum;
      m[r] = m_new;
    }
    // O += P · V[k0:k0+kt]  [rows, hd]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, kt, 1.0f, S, kKeyTile,
                v + static_cast<int64_t>(k0) * hd, hd, 1.0f, o, hd);
  }
  for (int r = 0; r < rows; ++r) {
    const float inv = 1.0f / l[r];
    float* orow = o + static_cast<int64_t>(r) * hd;
    for (int d = 0; d < hd; ++d) orow[d] *= inv;
  }
}

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
    for (int j = 0; j < len; ++j) scores[j] = Dot(q, k + static_cast<int64_t>(lo + j) * hd, hd);
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
    for (int i = 0; i < len; ++i) {
      const float* kr = k + static_cast<int64_t>(lo + i) * hd;
      for (int j = 0; j < G; ++j) scores[j * n_keys + i] = Dot(q + j * hd, kr, hd);
    }
    float mx[kMaxGroup], sum[kMaxGroup];
    for (int j = 0; j < G; ++j) {
      mx[j] = MaxOf(scores + j * n_keys, len);
      sum[j] = ExpSubSum(scores + j * n_keys, len, mx[j]);
    }
    float* orow = o + static_cast<int64_t>(r0) * hd;
    for (int i = 0; i < len; ++i) {
      const float* vr = v + static_cast<int64_t>(lo + i) * hd;
      for (int j = 0; j < G; ++j) Axpy(scores[j * n_keys + i], vr, orow + j * hd, hd);
    }
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
