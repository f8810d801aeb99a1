// KIVI fused kernels: layouts and the arithmetic both twins compute in kv/store/kivi_kernels.h.
// The kernels are compiled once per kernel path (base/isa_passes.h): AVX-512 below, AVX2 in
// kivi_kernels_avx2.inl.h; the portable path runs the scalar references.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/store/kivi_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "base/half.h"
#include "base/status.h"
#include "kv/formats/asym_group_quant.h"
#include "ops/dot.h"

namespace kvaudit {

// ---- scalar references (the definition; paths without AVX-512 run these) ----

void KiviKeyGroupDotRef(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                        int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride) {
  KV_CHECK(hd > 0 && hd <= kKiviMaxHeadDim && 0 <= lo && lo <= hi && hi <= G);
  const int64_t cb = AsymCodeBytes(G, bits);
  float w[kKiviMaxHeadDim];  // [hd] q_c · s_c
  for (int i = 0; i < n_q; ++i) {
    const float* qi = q + i * q_stride;
    for (int c = 0; c < hd; ++c) w[c] = qi[c] * F16ToF32(sm[2 * c]);
    const float qm = DotCanonicalScalar(
        qi, [sm](int64_t c) { return F16ToF32(sm[2 * c + 1]); }, hd);
    for (int t = lo; t < hi; ++t) {
      float a = 0.0f;
      for (int c = 0; c < hd; ++c) a = std::fma(w[c], static_cast<float>(AsymCode(codes + c * cb, t, bits)), a);
      out[i * out_stride + t - lo] = a + qm;
    }
  }
}

void KiviValueRowsAxpyRef(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                          int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  KV_CHECK(hd > 0 && G > 0 && hd % G == 0);
  const int ng = hd / G;
  const int64_t cb = AsymCodeBytes(G, bits), row_bytes = ng * cb;
  for (int r = 0; r < n_rows; ++r) {
    for (int g = 0; g < ng; ++g) {
      const uint8_t* cg = codes + r * row_bytes + g * cb;
      const uint16_t* smg = sm + (static_cast<int64_t>(r) * ng + g) * 2;
      const float s = F16ToF32(smg[0]), m = F16ToF32(smg[1]);
      for (int e = 0; e < G; ++e) {
        const float x = std::fma(static_cast<float>(AsymCode(cg, e, bits)), s, m);  // exact product
        for (int i = 0; i < n_w; ++i) {
          float& a = acc[i * acc_stride + g * G + e];
          a = std::fma(x, w[i * w_stride + r], a);
        }
      }
    }
  }
}

}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/store/kivi_kernels.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
void KiviKeyGroupDot(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                     int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride) {
  KVAUDIT_DISPATCH(KiviKeyGroupDot, codes, sm, hd, G, bits, q, q_stride, n_q, lo, hi, out, out_stride);
}
void KiviValueRowsAxpy(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  KVAUDIT_DISPATCH(KiviValueRowsAxpy, codes, sm, n_rows, hd, G, bits, w, w_stride, n_w, acc, acc_stride);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"

#if defined(KVAUDIT_ISA_AVX512)
namespace {

constexpr int kMaxBatch = 8;  // queries / weight rows per register tile

// A slab = 16 consecutive codes of a group (2·kBits bytes, byte aligned when G % 16 == 0), shifted
// so that the low kBits of lane l hold the code of element ElemOfLane(l):
//   2-bit: the 32-bit word >> 2l, element l;
//   4-bit: the 64-bit word >> 4k per qword k, so lane 2k = element k and lane 2k+1 = element 8 + k.
// Higher bits hold later codes. Keys mask and convert them (and + cvt); values look the low 4 bits
// up in a 16-entry table of dequantized values (_mm512_permutexvar_ps: and, cvt and fma in one
// step; the 2-bit table repeats every 4 entries, so the next code's bits do not matter).
template <int kBits>
inline __m512i SlabShifted(const uint8_t* p) {
  if constexpr (kBits == 2) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(u)),
                             _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30));
  } else {
    uint64_t u;
    std::memcpy(&u, p, 8);
    return _mm512_srlv_epi64(_mm512_set1_epi64(static_cast<long long>(u)),
                             _mm512_setr_epi64(0, 4, 8, 12, 16, 20, 24, 28));
  }
}
// table[x] = the code in the low kBits of x, as a float (ValueTable's base).
template <int kBits>
inline __m512 CodeTable() {
  if constexpr (kBits == 2)
    return _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  else
    return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
// Slab lanes -> elements in order, and back (identity for 2-bit).
template <int kBits>
inline __m512 ToNatural(__m512 v) {
  if constexpr (kBits == 2)
    return v;
  else
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15), v);
}
template <int kBits>
inline __m512 ToLanes(__m512 v) {
  if constexpr (kBits == 2)
    return v;
  else
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15), v);
}

// ---- keys ----

// One group's per-query constants, 16 channels per step: w [nb, hd] = q_i ⊙ s, qm [nb] = the
// canonical dot of q_i and m (ops/dot.h: 16 lane fma chains, then ReduceAdd16), i.e. DotF32(q_i, m).
void KeyPrep(const uint16_t* sm, int hd, const float* q, int64_t q_stride, int nb, float* w, float* qm) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512 acc[kMaxBatch];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  for (int c = 0; c < hd; c += 16) {
    const __m512i raw = _mm512_loadu_si512(sm + 2 * c);  // 16 (scale, min) pairs
    const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(raw)),
                 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(raw, 1));
    const __m512 s = _mm512_permutex2var_ps(lo, even, hi), m = _mm512_permutex2var_ps(lo, odd, hi);
    for (int i = 0; i < nb; ++i) {
      const __m512 qv = _mm512_loadu_ps(q + i * q_stride + c);
      _mm512_storeu_ps(w + static_cast<int64_t>(i) * hd + c, _mm512_mul_ps(qv, s));
      acc[i] = _mm512_fmadd_ps(qv, m, acc[i]);
    }
  }
  for (int i = 0; i < nb; ++i) qm[i] = ReduceAdd16(acc[i]);
}

// Slabs s0 .. s0+NS−1 of the group for NQ queries: acc [NQ][NS] zmm (one fma chain per (query,
// token) lane over the channels), each channel's slabs decoded once for all NQ queries.
template <int kBits, int NQ, int NS>
void KeySlabs(const uint8_t* codes, int64_t cb, int hd, const float* w, const float* qm, int s0, int lo, int hi,
              float* out, int64_t out_stride) {
  const __m512i mask = _mm512_set1_epi32((1 << kBits) - 1);
  __m512 acc[NQ][NS];
  for (auto& row : acc) {
    for (__m512& a : row) a = _mm512_setzero_ps();
  }
  const uint8_t* p = codes + s0 * 2 * kBits;
  for (int c = 0; c < hd; ++c, p += cb) {
    __m512 x[NS];  // [NS] 16 codes each
    for (int k = 0; k < NS; ++k)
      x[k] = _mm512_cvtepi32_ps(_mm512_and_si512(SlabShifted<kBits>(p + k * 2 * kBits), mask));
    for (int i = 0; i < NQ; ++i) {
      const __m512 wc = _mm512_set1_ps(w[static_cast<int64_t>(i) * hd + c]);
      for (int k = 0; k < NS; ++k) acc[i][k] = _mm512_fmadd_ps(wc, x[k], acc[i][k]);
    }
  }
  for (int i = 0; i < NQ; ++i) {
    for (int k = 0; k < NS; ++k) {
      alignas(64) float tmp[16];  // [16] scores of tokens t_begin ..
      _mm512_store_ps(tmp, ToNatural<kBits>(_mm512_add_ps(acc[i][k], _mm512_set1_ps(qm[i]))));
      const int t_begin = (s0 + k) * 16, a = std::max(lo, t_begin), b = std::min(hi, t_begin + 16);
      for (int t = a; t < b; ++t) out[i * out_stride + t - lo] = tmp[t - t_begin];
    }
  }
}

using KeyFn = void (*)(const uint8_t*, int64_t, int, const float*, const float*, int, int, int, float*, int64_t);
template <int kBits, int NS, int... I>
constexpr std::array<KeyFn, kMaxBatch> KeyFns(std::integer_sequence<int, I...>) {
  return {&KeySlabs<kBits, I + 1, NS>...};
}
constexpr auto kBatchSeq = std::make_integer_sequence<int, kMaxBatch>{};
// [bits 4?][NS − 1][NQ − 1]
const std::array<KeyFn, kMaxBatch> kKeyFns[2][2] = {{KeyFns<2, 1>(kBatchSeq), KeyFns<2, 2>(kBatchSeq)},
                                                    {KeyFns<4, 1>(kBatchSeq), KeyFns<4, 2>(kBatchSeq)}};

void KeyGroupDotSimd(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                     int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride) {
  alignas(64) float w[kMaxBatch * kKiviMaxHeadDim];  // [nb, hd]
  float qm[kMaxBatch];                               // [nb]
  const int64_t cb = static_cast<int64_t>(G) * bits / 8;
  const int s_begin = lo / 16, s_end = (hi + 15) / 16;  // only the slabs holding requested tokens
  const auto& fns = kKeyFns[bits == 4];
  for (int i0 = 0; i0 < n_q; i0 += kMaxBatch) {
    const int nb = std::min(kMaxBatch, n_q - i0);
    KeyPrep(sm, hd, q + i0 * q_stride, q_stride, nb, w, qm);
    float* o = out + i0 * out_stride;
    int s = s_begin;
    for (; s + 2 <= s_end; s += 2) fns[1][nb - 1](codes, cb, hd, w, qm, s, lo, hi, o, out_stride);
    if (s < s_end) fns[0][nb - 1](codes, cb, hd, w, qm, s, lo, hi, o, out_stride);
  }
}

// ---- values ----

// table[x] = code(x)·s + m for one group's (scale, min) pair: the dequantized values of its codes.
template <int kBits>
inline __m512 ValueTable(const uint16_t* sm) {
  uint32_t pair;
  std::memcpy(&pair, sm, 4);
  const __m512 v = _mm512_cvtph_ps(_mm256_set1_epi32(static_cast<int>(pair)));  // [s, m] × 8
  const __m512 s = _mm512_moveldup_ps(v), m = _mm512_movehdup_ps(v);
  return _mm512_fmadd_ps(CodeTable<kBits>(), s, m);
}

// Channel slabs k0 .. k0+T−1 (16 channels each) of every row for NW weight rows: acc [NW][T] zmm
// kept in registers over the rows (slab lane order), each row's slabs decoded once for all NW.
template <int kBits, int NW, int T>
void ValueTile(const uint8_t* codes, int64_t row_bytes, const uint16_t* sm, int ng, int G, int n_rows, int k0,
               const float* w, int64_t w_stride, float* acc, int64_t acc_stride) {
  int grp[T];     // [T] group of each slab
  bool fresh[T];  // [T] slab starts a group (or the tile): load its table
  for (int k = 0; k < T; ++k) {
    const int c = (k0 + k) * 16;
    grp[k] = c / G;
    fresh[k] = k == 0 || c % G == 0;
  }
  __m512 a[NW][T];
  for (int i = 0; i < NW; ++i) {
    for (int k = 0; k < T; ++k) a[i][k] = ToLanes<kBits>(_mm512_loadu_ps(acc + i * acc_stride + (k0 + k) * 16));
  }
  const uint8_t* p = codes + k0 * 2 * kBits;
  const uint16_t* smr = sm;
  for (int r = 0; r < n_rows; ++r, p += row_bytes, smr += 2 * ng) {
    __m512 x[T], table = _mm512_setzero_ps();  // [T] 16 dequantized values each
    for (int k = 0; k < T; ++k) {
      if (fresh[k]) table = ValueTable<kBits>(smr + 2 * grp[k]);
      x[k] = _mm512_permutexvar_ps(SlabShifted<kBits>(p + k * 2 * kBits), table);
    }
    for (int i = 0; i < NW; ++i) {
      const __m512 wv = _mm512_set1_ps(w[i * w_stride + r]);
      for (int k = 0; k < T; ++k) a[i][k] = _mm512_fmadd_ps(x[k], wv, a[i][k]);
    }
  }
  for (int i = 0; i < NW; ++i) {
    for (int k = 0; k < T; ++k) _mm512_storeu_ps(acc + i * acc_stride + (k0 + k) * 16, ToNatural<kBits>(a[i][k]));
  }
}

// Slabs per tile: NW·T accumulators stay <= 16 of the 32 zmm.
constexpr int TileFor(int nw) { return nw <= 2 ? 8 : nw <= 4 ? 4 : 2; }

using ValueFn = void (*)(const uint8_t*, int64_t, const uint16_t*, int, int, int, int, const float*, int64_t, float*,
                         int64_t);
template <int kBits, bool kWide, int... I>
constexpr std::array<ValueFn, kMaxBatch> ValueFns(std::integer_sequence<int, I...>) {
  return {&ValueTile < kBits, I + 1, kWide ? TileFor(I + 1) : 1 > ...};
}
// [bits 4?][wide?][NW − 1]
const std::array<ValueFn, kMaxBatch> kValueFns[2][2] = {{ValueFns<2, false>(kBatchSeq), ValueFns<2, true>(kBatchSeq)},
                                                        {ValueFns<4, false>(kBatchSeq), ValueFns<4, true>(kBatchSeq)}};

void ValueRowsAxpySimd(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  const int ng = hd / G, n_slabs = hd / 16;
  const int64_t row_bytes = static_cast<int64_t>(hd) * bits / 8;
  const auto& fns = kValueFns[bits == 4];
  for (int i0 = 0; i0 < n_w; i0 += kMaxBatch) {
    const int nb = std::min(kMaxBatch, n_w - i0), tile = TileFor(nb);
    const float* wi = w + i0 * w_stride;
    float* ai = acc + i0 * acc_stride;
    int k0 = 0;
    for (; k0 + tile <= n_slabs; k0 += tile)
      fns[1][nb - 1](codes, row_bytes, sm, ng, G, n_rows, k0, wi, w_stride, ai, acc_stride);
    for (; k0 < n_slabs; ++k0) fns[0][nb - 1](codes, row_bytes, sm, ng, G, n_rows, k0, wi, w_stride, ai, acc_stride);
  }
}

}  // namespace

void KiviKeyGroupDot(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                     int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride) {
  KV_CHECK(hd > 0 && hd <= kKiviMaxHeadDim && 0 <= lo && lo <= hi && hi <= G && (bits == 2 || bits == 4));
  if (G % 16 == 0) return KeyGroupDotSimd(codes, sm, hd, G, bits, q, q_stride, n_q, lo, hi, out, out_stride);
  KiviKeyGroupDotRef(codes, sm, hd, G, bits, q, q_stride, n_q, lo, hi, out, out_stride);
}

void KiviValueRowsAxpy(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  KV_CHECK(hd > 0 && G > 0 && hd % G == 0 && (bits == 2 || bits == 4));
  if (G % 16 == 0) return ValueRowsAxpySimd(codes, sm, n_rows, hd, G, bits, w, w_stride, n_w, acc, acc_stride);
  KiviValueRowsAxpyRef(codes, sm, n_rows, hd, G, bits, w, w_stride, n_w, acc, acc_stride);
}

#elif defined(KVAUDIT_ISA_AVX2)
#include "kv/store/kivi_kernels_avx2.inl.h"
#else
void KiviKeyGroupDot(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                     int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride) {
  KiviKeyGroupDotRef(codes, sm, hd, G, bits, q, q_stride, n_q, lo, hi, out, out_stride);
}
void KiviValueRowsAxpy(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride) {
  KiviValueRowsAxpyRef(codes, sm, n_rows, hd, G, bits, w, w_stride, n_w, acc, acc_stride);
}
#endif

#endif  // KVAUDIT_ISA_PASS
