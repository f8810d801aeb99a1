// Batched _one_chunk steps over a key tile: see kv/llamacpp/fa_tile.h. The SIMD kernels are
// compiled once per kernel path (base/isa_passes.h): the AVX-512 pass runs the VNNI score kernel
// and the 16-lane running max, the AVX2 pass the maddubs score kernel (llama.cpp's own AVX2
// branch) and 8-lane V accumulation, the portable pass the scalar twins; the scalar glue is
// defined once.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/llamacpp/fa_tile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kv/llamacpp/expf.h"
#include "kv/llamacpp/flash_attn.h"

namespace kvaudit::llamacpp {
namespace {

inline int32_t Load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

void QGroupCorrections(const int8_t* qc, int hd, int32_t* qg) {
  for (int g = 0; g < hd / 4; ++g) qg[g] = -128 * (qc[4 * g] + qc[4 * g + 1] + qc[4 * g + 2] + qc[4 * g + 3]);
}

void ScoreTileQ8Scalar(ggml::VecDotKind kind, const KTileView& k, const QRowView& q, int nb, float scale, int j_lo,
                       int j_hi, float* s) {
  const int hd = nb * 32;
  for (int j = j_lo; j <= j_hi; ++j) {
    s[j] = ggml::DotQ8BlocksScalar(kind, k.kc + static_cast<int64_t>(j) * hd, k.kd + j * nb, k.km + j * nb, q.qc, q.qd,
                                   q.qm, nb) *
           scale;
  }
}

void SoftmaxWeightsScalar(const float* s, int j_lo, int j_hi, float& M, float& S, uint8_t* up, float* ms, float* vs) {
  for (int j = j_lo; j <= j_hi; ++j) {
    up[j] = 0;
    ms[j] = vs[j] = 1.0f;
    if (s[j] > M) {
      const float m_old = M;
      M = s[j];
      ms[j] = std::exp(m_old - M);
      up[j] = 1;
    } else {
      vs[j] = std::exp(s[j] - M);
    }
    S = std::fma(S, ms[j], vs[j]);
  }
}

namespace {
template <int R>
void SumRows(const VRowsUpdate& u, int j_lo, int j_hi) {
  float S[R];
  for (int r = 0; r < R; ++r) S[r] = *u.S[r];
  for (int j = j_lo; j <= j_hi; ++j) {
    for (int r = 0; r < R; ++r) S[r] = std::fma(S[r], u.ms[r][j], u.vs[r][j]);
  }
  for (int r = 0; r < R; ++r) *u.S[r] = S[r];
}
}  // namespace

void SumWeights(const VRowsUpdate& u, int j_lo, int j_hi) {
  switch (u.n_rows) {
    case 1: return SumRows<1>(u, j_lo, j_hi);
    case 2: return SumRows<2>(u, j_lo, j_hi);
    case 3: return SumRows<3>(u, j_lo, j_hi);
    default: return SumRows<4>(u, j_lo, j_hi);
  }
}

void AccumulateVScalar(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, bool f16_acc) {
  for (int r = 0; r < u.n_rows; ++r) {
    for (int j = j_lo; j <= j_hi; ++j) {
      const float* v = vt + static_cast<int64_t>(j) * hd;
      if (f16_acc) {
        if (u.up[r][j]) ScaleF16Scalar(u.acc[r], u.ms[r][j], hd);
        MadF16Scalar(u.acc[r], v, u.vs[r][j], hd);
      } else {
        if (u.up[r][j]) ScaleF32Scalar(u.acc[r], u.ms[r][j], hd);
        MadF32Scalar(u.acc[r], v, u.vs[r][j], hd);
      }
    }
  }
}

}  // namespace kvaudit::llamacpp

#define KVAUDIT_ISA_SELF "kv/llamacpp/fa_tile.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::llamacpp {
// The transposed codes carry the bias of the active path's score kernel: a tile is transposed and
// scored on the same path.
void TransposeKTile(const int8_t* kc, const float* kd, const float* km, int hd, int j_lo, int j_hi, int32_t* gt,
                    float* dt, float* mt) {
  KVAUDIT_DISPATCH(llamacpp::TransposeKTile, kc, kd, km, hd, j_lo, j_hi, gt, dt, mt);
}
void ScoreTileQ8(ggml::VecDotKind kind, const KTileView& k, const QRowView& q, int nb, float scale, int j_lo, int j_hi,
                 float* s) {
  KVAUDIT_DISPATCH(llamacpp::ScoreTileQ8, kind, k, q, nb, scale, j_lo, j_hi, s);
}
void SoftmaxWeights(const float* s, int j_lo, int j_hi, float& M, uint8_t* up, float* ms, float* vs) {
  KVAUDIT_DISPATCH(llamacpp::SoftmaxWeights, s, j_lo, j_hi, M, up, ms, vs);
}
void AccumulateV(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, bool f16_acc) {
  KVAUDIT_DISPATCH(llamacpp::AccumulateV, u, vt, hd, j_lo, j_hi, f16_acc);
}
}  // namespace kvaudit::llamacpp

#else  // one kernel path, in namespace kvaudit::isa_<path>::llamacpp (base/isa_passes.h)
namespace llamacpp {
// The shared glue and types (kv/llamacpp/fa_tile.h, flash_attn.h). This path's own kernels, defined
// below (and its ExpBatch, declared in kv/llamacpp/expf.h), hide the dispatchers of the same name.
using namespace ::kvaudit::llamacpp;

namespace {
#if defined(KVAUDIT_ISA_AVX512)
#define KVAUDIT_LLAMACPP_TILE_VNNI 1
constexpr uint32_t kCodeBias = 0x80808080u;  // codes + 128 (mod 256): the u8 operand of dpbusd
#elif defined(KVAUDIT_ISA_AVX2)
#define KVAUDIT_LLAMACPP_TILE_AVX2 1
constexpr uint32_t kCodeBias = 0;
#else
constexpr uint32_t kCodeBias = 0;
#endif
}  // namespace

void TransposeKTile(const int8_t* kc, const float* kd, const float* km, int hd, int j_lo, int j_hi, int32_t* gt,
                    float* dt, float* mt) {
  const int ng = hd / 4, nb = hd / 32;
  for (int j = j_lo; j <= j_hi; ++j) {
    const int8_t* row = kc + static_cast<int64_t>(j) * hd;
    for (int g = 0; g < ng; ++g) {
      gt[g * kTileKeys + j] = static_cast<int32_t>(static_cast<uint32_t>(Load4(row + 4 * g)) ^ kCodeBias);
    }
    for (int b = 0; b < nb; ++b) {
      dt[b * kTileKeys + j] = kd[j * nb + b];
      mt[b * kTileKeys + j] = km[j * nb + b];
    }
  }
}

#if defined(KVAUDIT_LLAMACPP_TILE_VNNI) || defined(KVAUDIT_LLAMACPP_TILE_AVX2)
namespace {

#if defined(KVAUDIT_LLAMACPP_TILE_VNNI)
using VF = __m512;
constexpr int kKeys = 16;  // keys per register
inline VF Zero() { return _mm512_setzero_ps(); }
inline VF Set1(float x) { return _mm512_set1_ps(x); }
inline VF Load(const float* p) { return _mm512_loadu_ps(p); }
inline void Store(float* p, VF x) { _mm512_storeu_ps(p, x); }
inline VF Add(VF a, VF b) { return _mm512_add_ps(a, b); }
inline VF Mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
inline VF Fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VF RoundF16(VF x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }
// Lane sums of group g (codes 4g..4g+3) for 16 keys: Σ (k + 128)·q − 128·Σq, exact in int32.
inline VF Lanes(const int32_t* gt, const QRowView& q, int g) {
  const __m512i k = _mm512_loadu_si512(gt + g * kTileKeys);
  return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_set1_epi32(q.qg[g]), k, _mm512_set1_epi32(Load4(q.qc + 4 * g))));
}
#else
using VF = __m256;
constexpr int kKeys = 8;
inline VF Zero() { return _mm256_setzero_ps(); }
inline VF Set1(float x) { return _mm256_set1_ps(x); }
inline VF Load(const float* p) { return _mm256_loadu_ps(p); }
inline void Store(float* p, VF x) { _mm256_storeu_ps(p, x); }
inline VF Add(VF a, VF b) { return _mm256_add_ps(a, b); }
inline VF Mul(VF a, VF b) { return _mm256_mul_ps(a, b); }
inline VF Fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF RoundF16(VF x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }
// ggml's mul_sum_i8_pairs_float for 8 keys: maddubs(|k|, sign(q, k)) then madd by 1 (|k|, |q| ≤ 127:
// no int16 saturation, so the sums are exact).
inline VF Lanes(const int32_t* gt, const QRowView& q, int g) {
  const __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gt + g * kTileKeys));
  const __m256i qb = _mm256_set1_epi32(Load4(q.qc + 4 * g));
  const __m256i dot = _mm256_maddubs_epi16(_mm256_abs_epi8(k), _mm256_sign_epi8(qb, k));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(dot, _mm256_set1_epi16(1)));
}
#endif

// kKeys keys starting at tile key c (DotQ8Blocks's float steps, lanes of a block in registers).
template <ggml::VecDotKind kKind>
inline VF ScoreKeys(const KTileView& k, const QRowView& q, int nb, int c) {
  VF acc0[8], acc1[8];
  for (int i = 0; i < 8; ++i) acc0[i] = acc1[i] = Zero();
  VF summs = Zero();
  const int32_t* gt = k.gt + c;
  for (int b = 0; b < nb; ++b) {
    const VF d = Mul(Load(k.dt + b * kTileKeys + c), Set1(q.qd[b]));  // fp16(d_k)·fp16(d_q)
    if (kKind == ggml::VecDotKind::kIq4Nl && (b & 1)) {               // iq4_nl: odd blocks in the second accumulator
      for (int i = 0; i < 8; ++i) acc1[i] = Fma(d, Lanes(gt, q, b * 8 + i), acc1[i]);
    } else {
      for (int i = 0; i < 8; ++i) acc0[i] = Fma(d, Lanes(gt, q, b * 8 + i), acc0[i]);
    }
    if (kKind == ggml::VecDotKind::kAffine) summs = Fma(Load(k.mt + b * kTileKeys + c), Set1(q.qm[b]), summs);
  }
  if (kKind == ggml::VecDotKind::kIq4Nl) {
    for (int i = 0; i < 8; ++i) acc0[i] = Add(acc0[i], acc1[i]);
  }
  // hsum_float_8 per key (HSum8V's operand order): ((x4+x0) + (x6+x2)) + ((x5+x1) + (x7+x3)).
  VF r = Add(Add(Add(acc0[4], acc0[0]), Add(acc0[6], acc0[2])), Add(Add(acc0[5], acc0[1]), Add(acc0[7], acc0[3])));
  if (kKind == ggml::VecDotKind::kAffine) r = Add(r, summs);
  return r;
}

template <ggml::VecDotKind kKind>
void ScoreTile(const KTileView& k, const QRowView& q, int nb, float scale, int j_lo, int j_hi, float* s) {
  const VF vscale = Set1(scale);
  for (int c = j_lo / kKeys * kKeys; c <= j_hi; c += kKeys) Store(s + c, Mul(ScoreKeys<kKind>(k, q, nb, c), vscale));
}

}  // namespace

void ScoreTileQ8(ggml::VecDotKind kind, const KTileView& k, const QRowView& q, int nb, float scale, int j_lo, int j_hi,
                 float* s) {
  switch (kind) {
    case ggml::VecDotKind::kSym: return ScoreTile<ggml::VecDotKind::kSym>(k, q, nb, scale, j_lo, j_hi, s);
    case ggml::VecDotKind::kAffine: return ScoreTile<ggml::VecDotKind::kAffine>(k, q, nb, scale, j_lo, j_hi, s);
    case ggml::VecDotKind::kIq4Nl:
      // An odd block count ends in ggml's scalar tail block: the twin handles it.
      if (nb % 2 == 0) return ScoreTile<ggml::VecDotKind::kIq4Nl>(k, q, nb, scale, j_lo, j_hi, s);
      break;
    default: break;
  }
  ScoreTileQ8Scalar(kind, k, q, nb, scale, j_lo, j_hi, s);
}
#else
void ScoreTileQ8(ggml::VecDotKind kind, const KTileView& k, const QRowView& q, int nb, float scale, int j_lo, int j_hi,
                 float* s) {
  ScoreTileQ8Scalar(kind, k, q, nb, scale, j_lo, j_hi, s);
}
#endif

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// Lanes i >= k get x[i - k], lanes i < k get fill (valignd).
template <int k>
inline __m512 ShiftUp(__m512 x, __m512 fill) {
  return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(x), _mm512_castps_si512(fill), 16 - k));
}
// The running max before each key, 16 keys at a time: M before key j = max(M, s[j_lo..j − 1]) over
// the non-NaN scores (a NaN score is never > M, so it never becomes the max; it is scanned as
// −inf). The max of equal ±0 may come out with either sign where the sequential loop keeps the
// first: M only enters as s − M / M − s before expf and in s > M, where ±0 give the same results.
void RunningMax(const float* s, int j_lo, int j_hi, float& M, uint8_t* up, float* arg) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 carry = _mm512_set1_ps(M);
  for (int j = j_lo; j <= j_hi; j += 16) {
    const int n = std::min(16, j_hi - j + 1);
    const __mmask16 live = static_cast<__mmask16>(n == 16 ? 0xffffu : (1u << n) - 1);
    const __m512 x = _mm512_mask_loadu_ps(ninf, live, s + j);
    __m512 y = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), ninf);
    y = _mm512_max_ps(y, ShiftUp<1>(y, ninf));
    y = _mm512_max_ps(y, ShiftUp<2>(y, ninf));
    y = _mm512_max_ps(y, ShiftUp<4>(y, ninf));
    y = _mm512_max_ps(y, ShiftUp<8>(y, ninf));  // inclusive prefix max
    const __m512 prev = _mm512_max_ps(ShiftUp<1>(y, ninf), carry);
    const __mmask16 u = _mm512_cmp_ps_mask(x, prev, _CMP_GT_OQ) & live;
    _mm512_mask_storeu_ps(arg + j, live, _mm512_mask_sub_ps(_mm512_sub_ps(x, prev), u, prev, x));
    _mm_mask_storeu_epi8(up + j, live, _mm_maskz_set1_epi8(u, 1));
    carry = _mm512_max_ps(carry, _mm512_permutexvar_ps(_mm512_set1_epi32(15), y));
  }
  M = _mm512_cvtss_f32(carry);
}
#else
void RunningMax(const float* s, int j_lo, int j_hi, float& M, uint8_t* up, float* arg) {
  float m = M;
  for (int j = j_lo; j <= j_hi; ++j) {
    const float sj = s[j];
    const bool u = sj > m;
    arg[j] = u ? m - sj : sj - m;
    m = u ? sj : m;
    up[j] = u;
  }
  M = m;
}
#endif
}  // namespace

void SoftmaxWeights(const float* s, int j_lo, int j_hi, float& M, uint8_t* up, float* ms, float* vs) {
  alignas(64) float arg[kTileKeys] = {}, e[kTileKeys];  // = {}: GCC 12 -O3 sees a maybe-uninitialized read
  RunningMax(s, j_lo, j_hi, M, up, arg);
  ExpBatch(arg + j_lo, e + j_lo, j_hi - j_lo + 1);
  for (int j = j_lo; j <= j_hi; ++j) {
    ms[j] = up[j] ? e[j] : 1.0f;
    vs[j] = up[j] ? 1.0f : e[j];
  }
}

#if defined(KVAUDIT_LLAMACPP_TILE_VNNI) || defined(KVAUDIT_LLAMACPP_TILE_AVX2)
namespace {
constexpr int kLanesF = static_cast<int>(sizeof(VF) / sizeof(float));

// Columns [d0, d0 + W·lanes) of R rows, accumulators in registers across the keys. A row that is
// not at a new max at key j has ms = 1: acc·1 is acc bit for bit (and an f16-rounded acc rounds to
// itself), so rows are scaled together whenever any of them is at a new max.
template <int R, int W, bool kF16>
void AccumulateColumns(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, int d0) {
  VF a[R][W];
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) a[r][w] = Load(u.acc[r] + d0 + w * kLanesF);
  for (int j = j_lo; j <= j_hi; ++j) {
    const float* v = vt + static_cast<int64_t>(j) * hd + d0;
    VF vv[W];
    for (int w = 0; w < W; ++w) vv[w] = Load(v + w * kLanesF);
    bool any_up = false;
    for (int r = 0; r < R; ++r) any_up |= u.up[r][j] != 0;
    if (any_up) {
      for (int r = 0; r < R; ++r) {
        const VF ms = Set1(u.ms[r][j]);
        for (int w = 0; w < W; ++w) a[r][w] = kF16 ? RoundF16(Mul(a[r][w], ms)) : Mul(a[r][w], ms);
      }
    }
    for (int r = 0; r < R; ++r) {
      const VF vs = Set1(u.vs[r][j]);
      for (int w = 0; w < W; ++w) a[r][w] = kF16 ? RoundF16(Fma(vv[w], vs, a[r][w])) : Fma(vv[w], vs, a[r][w]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) Store(u.acc[r] + d0 + w * kLanesF, a[r][w]);
}

template <int R, bool kF16>
void AccumulateRows(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi) {
  constexpr int kW = 4;  // registers per row per pass: 64 (AVX-512) or 32 (AVX2) columns
  int d0 = 0;
  for (; d0 + kW * kLanesF <= hd; d0 += kW * kLanesF) AccumulateColumns<R, kW, kF16>(u, vt, hd, j_lo, j_hi, d0);
  for (; d0 < hd; d0 += kLanesF) AccumulateColumns<R, 1, kF16>(u, vt, hd, j_lo, j_hi, d0);
}

template <bool kF16>
void AccumulateN(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi) {
  switch (u.n_rows) {
    case 1: return AccumulateRows<1, kF16>(u, vt, hd, j_lo, j_hi);
    case 2: return AccumulateRows<2, kF16>(u, vt, hd, j_lo, j_hi);
    case 3: return AccumulateRows<3, kF16>(u, vt, hd, j_lo, j_hi);
    default: return AccumulateRows<4, kF16>(u, vt, hd, j_lo, j_hi);
  }
}
}  // namespace

void AccumulateV(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, bool f16_acc) {
  if (hd % kLanesF != 0 || u.n_rows < 1 || u.n_rows > 4) return AccumulateVScalar(u, vt, hd, j_lo, j_hi, f16_acc);
  if (f16_acc)
    AccumulateN<true>(u, vt, hd, j_lo, j_hi);
  else
    AccumulateN<false>(u, vt, hd, j_lo, j_hi);
}
#else
void AccumulateV(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, bool f16_acc) {
  AccumulateVScalar(u, vt, hd, j_lo, j_hi, f16_acc);
}
#endif

#undef KVAUDIT_LLAMACPP_TILE_VNNI  // per pass
#undef KVAUDIT_LLAMACPP_TILE_AVX2

}  // namespace llamacpp
#endif  // KVAUDIT_ISA_PASS
