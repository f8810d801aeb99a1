// f32 attention chunk kernels: see kv/attention/f32_attention.h. AttendChunk's V accumulation
// (Axpy) is compiled once per kernel path (base/isa_passes.h); the rest is scalar glue over the
// dispatched dot / exp / row-codec kernels, defined once.
#ifndef KVAUDIT_ISA_PASS
#include "ops/dot.h"  // first: see the note on GCC bug 105593

#include "kv/attention/f32_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/status.h"
#include "kv/formats/float_codecs.h"
#include "ops/activation.h"

namespace kvaudit {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline const uint8_t* AsBytes(const float* x) { return reinterpret_cast<const uint8_t*>(x); }
}  // namespace

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
    // The f32 row codec's multi-row kernels (kv/formats/codec_kernels.h): each K row read once for the G
    // heads, canonical dots (= DotF32); V accumulated with one fma per element in ascending key
    // order (= Axpy), the accumulators held in registers across the chunk.
    const RowCodec& f32 = F32Codec();
    const uint64_t row_bytes = sizeof(float) * hd;
    f32.dot_rows(AsBytes(k + static_cast<int64_t>(lo - k0) * hd), row_bytes, len, q, hd, G, hd, scores, n_keys, {});
    float mx[kMaxGroup], sum[kMaxGroup];
    for (int j = 0; j < G; ++j) {
      SoftcapScores(s, scores + j * n_keys, len);
      mx[j] = MaxOf(scores + j * n_keys, len);
      sum[j] = ExpSubSum(scores + j * n_keys, len, mx[j]);
    }
    f32.axpy_rows(AsBytes(v + static_cast<int64_t>(lo - k0) * hd), row_bytes, len, scores, n_keys, G,
                  o + static_cast<int64_t>(r0) * hd, hd, hd, {});
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
      if (s.softcap > 0) d = std::tanh(d / s.softcap) * s.softcap;
      w[j - lo] = d;
      mx = std::max(mx, d);
    }
    const double sink = s.sinks ? s.sinks[r % G] : -1e300;  // qs holds one KV head's G query heads
    mx = std::max(mx, sink);
    double sum = s.sinks ? std::exp(sink - mx) : 0.0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    for (int c = 0; c < hd; ++c) {
      double acc = 0;
      for (int j = lo; j <= p; ++j) acc += w[j - lo] * v[static_cast<int64_t>(j) * hd + c];
      o[static_cast<int64_t>(r) * hd + c] = static_cast<float>(acc / sum);
    }
  }
}

}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/attention/f32_attention.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
void AttendChunk(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, int k0,
                 int k1, float* o, PartialRow* part, float* scores) {
  KVAUDIT_DISPATCH(AttendChunk, s, qs, n_tok, pos0, k, v, k0, k1, o, part, scores);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"

namespace {
// y += a * x, one fma per element (acc = fma(p_t, v_t[d], acc) in ascending t across calls).
#if defined(KVAUDIT_ISA_AVX512)
inline void Axpy(float a, const float* x, float* y, int n) {
  const __m512 va = _mm512_set1_ps(a);
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = TailMask16(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}
#else
inline void Axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}
#endif

}  // namespace

// Scores and exp: this path's DotF32 / MaxOf / ExpSubSum (ops/, declared per path: no dispatch per key).
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
    for (int j = 0; j < len; ++j) scores[j] = DotF32(q, k + static_cast<int64_t>(lo - k0 + j) * hd, hd);
    SoftcapScores(s, scores, len);
    const float mx = MaxOf(scores, len);
    const float sum = ExpSubSum(scores, len, mx);
    float* orow = o + static_cast<int64_t>(r) * hd;
    for (int j = 0; j < len; ++j) Axpy(scores[j], v + static_cast<int64_t>(lo - k0 + j) * hd, orow, hd);
    part[r] = {mx, sum};
  }
}

#endif  // KVAUDIT_ISA_PASS
