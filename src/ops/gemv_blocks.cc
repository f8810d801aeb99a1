// Decode gemv over block-type rows with each block decoded in registers (AVX-512): no f32
// scratch round trip. The values are those of DequantizeBlocks (quant/dequantize*.cc) and each
// row's 16 lane accumulators see them in the canonical sequence (k ascending, lane k mod 16), so
// the bits are those of the f32 gemv on the dequantized matrix (tests/unit/ops_packed_matmul_test).
//
// The 4- and 5-bit formats decode through a per-block (or per-sub-block) table of their 16 or 32
// f32 levels: the reference's f32 operations applied to the codes 0..15 (0..31) once, then one
// vpermps / vpermt2ps per 16 weights picks each weight's level. The table holds exactly the
// value the reference computes for that code, so the weight is the same bits; the permute reads
// only the index's low 4 (5) bits, which is why the low nibbles need no mask.
#ifndef KVAUDIT_ISA_PASS
#include "ops/weight_load.h"  // first: see the note on GCC bug 105593

#include "ops/gemv_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/half.h"
#include "quant/dequantize.h"

#include "base/fp_contract_off.h"  // the tables keep the reference's two roundings for d*q + m

#define KVAUDIT_ISA_SELF "ops/gemv_blocks.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "quant/block_vec.inl.h"
#include "ops/dot_simd.inl.h"

#if defined(KVAUDIT_MATMUL_AVX512)
namespace {
using block_simd::LoadScale;

// Rows ahead whose blocks are prefetched (the weights stream from L3 or DRAM: 16 interleaved row
// streams are more than the hardware prefetcher keeps ahead of).
constexpr int64_t kPrefetchRows = 32;

inline __m512i Codes(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m512i High4(__m512i codes) { return _mm512_srli_epi32(codes, 4); }
inline __m512 Iota(int first) {
  return _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                             _mm512_set1_epi32(first)));
}
inline __m512 Pick(__m512i code, __m512 table) { return _mm512_permutexvar_ps(code, table); }  // table[code & 15]
inline __m512 Pick32(__m512i code, __m512 lo, __m512 hi) { return _mm512_permutex2var_ps(lo, code, hi); }  // code & 31
// code | 16 in lane e where bit e0 + e of qh is set: q5's fifth bit.
inline __m512i WithBit16(__m512i code, uint32_t qh, int e0) {
  return _mm512_mask_or_epi32(code, static_cast<__mmask16>(qh >> e0), code, _mm512_set1_epi32(16));
}

// A 32-element block's f16 scales as f32: d, and m where the format has one (q4_1, q5_1).
struct HeadScales {
  float d = 0, m = 0;
};

// out[j] = the kN f16 scales at the start of block `offset` of row j, for 16 rows: one vcvtph2ps
// for all 16 instead of a scalar conversion and a broadcast per row on the vector ports. The
// hardware conversion is LoadScale's; an inf / NaN exponent goes to LoadScale per lane (which
// keeps a signaling NaN's payload), so each value is LoadScale's bits.
template <int kN>
inline void LoadHeadScales(const uint8_t* const* wr, size_t offset, HeadScales* out) {
  alignas(32) uint16_t h[2][16];  // [d | m, row]
  for (int j = 0; j < 16; ++j) {
    for (int n = 0; n < kN; ++n) std::memcpy(&h[n][j], wr[j] + offset + 2 * n, 2);
  }
  alignas(64) float f[2][16];  // [d | m, row]
  for (int n = 0; n < kN; ++n) {
    const __m256i hv = _mm256_load_si256(reinterpret_cast<const __m256i*>(h[n]));
    _mm512_store_ps(f[n], _mm512_cvtph_ps(hv));
    const __m256i exp = _mm256_set1_epi16(0x7C00);
    const uint32_t special = _mm256_cmpeq_epi16_mask(_mm256_and_si256(hv, exp), exp);
    for (int j = 0; j < 16; ++j) {
      if (special >> j & 1u) f[n][j] = LoadScale(wr[j] + offset + 2 * n);
    }
  }
  for (int j = 0; j < 16; ++j) out[j] = {f[0][j], kN == 2 ? f[1][j] : 0.0f};
}

// Each decoder: kElems and kBytes per block, kHeadScales (f16 scales at the block's start that the
// kernel converts for 16 rows at once: 0 for the K family, which read their own), and
// Run(block, scales, emit) calling emit(g, w) with the block's weights 16g..16g+15 (f32 [16]) for
// g ascending (the order the accumulators need).

struct DecQ8_0 {  // {f16 d; i8 qs[32]}: w = f32(q) · d (Q8_0Dequantize)
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockQ8_0), kHeadScales = 1;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& s, Emit&& emit) {
    const __m512 d = _mm512_set1_ps(s.d);
    for (int g = 0; g < 2; ++g)
      emit(g, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + 16 * g)))),
                            d));
  }
};

struct DecQ4_0 {  // {f16 d; u8 qs[16]}: level(q) = f32(q - 8) · d (Q4_0Dequantize)
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockQ4_0), kHeadScales = 1;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& s, Emit&& emit) {
    const __m512 t = _mm512_mul_ps(Iota(-8), _mm512_set1_ps(s.d));
    const __m512i q = Codes(b + 2);
    emit(0, Pick(q, t));
    emit(1, Pick(High4(q), t));
  }
};

struct DecQ4_1 {  // {f16 d, m; u8 qs[16]}: level(q) = f32(q) · d + m (Q4_1Dequantize)
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockQ4_1), kHeadScales = 2;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& s, Emit&& emit) {
    const __m512 t = _mm512_add_ps(_mm512_mul_ps(Iota(0), _mm512_set1_ps(s.d)), _mm512_set1_ps(s.m));
    const __m512i q = Codes(b + 4);
    emit(0, Pick(q, t));
    emit(1, Pick(High4(q), t));
  }
};

struct DecQ5_0 {  // {f16 d; u32 qh; u8 qs[16]}: level(q) = f32(q - 16) · d, q = nibble | bit << 4 (Q5_0Dequantize)
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockQ5_0), kHeadScales = 1;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& s, Emit&& emit) {
    const __m512 d = _mm512_set1_ps(s.d);
    const __m512 lo = _mm512_mul_ps(Iota(-16), d), hi = _mm512_mul_ps(Iota(0), d);
    const uint32_t qh = block_simd::LoadU32(b + 2);
    const __m512i q = Codes(b + 6);
    emit(0, Pick32(WithBit16(_mm512_and_si512(q, _mm512_set1_epi32(15)), qh, 0), lo, hi));
    emit(1, Pick32(WithBit16(High4(q), qh, 16), lo, hi));
  }
};

struct DecQ5_1 {  // {f16 d, m; u32 qh; u8 qs[16]}: level(q) = f32(q) · d + m (Q5_1Dequantize)
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockQ5_1), kHeadScales = 2;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& s, Emit&& emit) {
    const __m512 d = _mm512_set1_ps(s.d), m = _mm512_set1_ps(s.m);
    const __m512 lo = _mm512_add_ps(_mm512_mul_ps(Iota(0), d), m), hi = _mm512_add_ps(_mm512_mul_ps(Iota(16), d), m);
    const uint32_t qh = block_simd::LoadU32(b + 4);
    const __m512i q = Codes(b + 8);
    emit(0, Pick32(WithBit16(_mm512_and_si512(q, _mm512_set1_epi32(15)), qh, 0), lo, hi));
    emit(1, Pick32(WithBit16(High4(q), qh, 16), lo, hi));
  }
};

struct DecIQ4_NL {  // {f16 d; u8 qs[16]}: level(q) = d · kvalues_iq4nl[q] (Iq4NlDequantize)
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockIq4Nl), kHeadScales = 1;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& s, Emit&& emit) {
    const __m512 t = _mm512_mul_ps(_mm512_set1_ps(s.d), _mm512_loadu_ps(block_simd::kIq4NlLevelsF));
    const __m512i q = Codes(b + 2);
    emit(0, Pick(q, t));
    emit(1, Pick(High4(q), t));
  }
};

// {u8 e; u8 qs[16]}: level(q) = f32(kvalues_mxfp4[q]) · d, d = 2^(e-128) from the exponent byte
// (Mxfp4Dequantize, RowMXFP4); no f16 scale to convert, so kHeadScales = 0.
struct DecMXFP4 {
  static constexpr int kElems = ggml::kQK, kBytes = sizeof(ggml::BlockMxfp4), kHeadScales = 0;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& /*none*/, Emit&& emit) {
    const __m512 t =
        _mm512_mul_ps(_mm512_loadu_ps(block_simd::kMxfp4LevelsF), _mm512_set1_ps(ggml::E8M0ToF32Half(b[0])));
    const __m512i q = Codes(b + 1);
    emit(0, Pick(q, t));
    emit(1, Pick(High4(q), t));
  }
};

// q4_K {f16 d, dmin; u8 scales[12]; u8 qs[128]}: chunk c of 64 elements = 32 bytes, low nibbles
// in sub-block 2c, high in 2c+1; level(q) = dsc · f32(q) − dmn (RowQ4_KSimd).
struct DecQ4_K {
  static constexpr int kElems = ggml::kQK_K, kBytes = sizeof(ggml::BlockQ4_K), kHeadScales = 0;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& /*read here*/, Emit&& emit) {
    alignas(32) float dsc[8], dmn[8];
    block_simd::ScalesK4(b + 4, LoadScale(b), LoadScale(b + 2), dsc, dmn);
    const __m512 iota = Iota(0);
    for (int c = 0; c < 4; ++c) {
      const __m512 t1 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dsc[2 * c]), iota), _mm512_set1_ps(dmn[2 * c]));
      const __m512 t2 =
          _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dsc[2 * c + 1]), iota), _mm512_set1_ps(dmn[2 * c + 1]));
      const __m512i q0 = Codes(b + 16 + 32 * c), q1 = Codes(b + 32 + 32 * c);
      emit(4 * c, Pick(q0, t1));
      emit(4 * c + 1, Pick(q1, t1));
      emit(4 * c + 2, Pick(High4(q0), t2));
      emit(4 * c + 3, Pick(High4(q1), t2));
    }
  }
};

// q5_K {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: q4_K plus the fifth bit, bit 2c (low
// half) / 2c+1 (high half) of qh[l]; 32 levels per sub-block (RowQ5_KSimd).
struct DecQ5_K {
  static constexpr int kElems = ggml::kQK_K, kBytes = sizeof(ggml::BlockQ5_K), kHeadScales = 0;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& /*read here*/, Emit&& emit) {
    alignas(32) float dsc[8], dmn[8];
    block_simd::ScalesK4(b + 4, LoadScale(b), LoadScale(b + 2), dsc, dmn);
    const __m512 iota0 = Iota(0), iota16 = Iota(16);
    const __m512i sixteen = _mm512_set1_epi32(16), low4 = _mm512_set1_epi32(15);
    const __m512i h0 = _mm512_slli_epi32(Codes(b + 16), 4), h1 = _mm512_slli_epi32(Codes(b + 32), 4);  // qh[l] << 4
    for (int c = 0; c < 4; ++c) {
      const __m512 d1 = _mm512_set1_ps(dsc[2 * c]), m1 = _mm512_set1_ps(dmn[2 * c]);
      const __m512 d2 = _mm512_set1_ps(dsc[2 * c + 1]), m2 = _mm512_set1_ps(dmn[2 * c + 1]);
      const __m512 lo1 = _mm512_sub_ps(_mm512_mul_ps(d1, iota0), m1),
                   hi1 = _mm512_sub_ps(_mm512_mul_ps(d1, iota16), m1);
      const __m512 lo2 = _mm512_sub_ps(_mm512_mul_ps(d2, iota0), m2),
                   hi2 = _mm512_sub_ps(_mm512_mul_ps(d2, iota16), m2);
      const __m512i q0 = Codes(b + 48 + 32 * c), q1 = Codes(b + 64 + 32 * c);
      const auto bit = [&](__m512i h, int n) { return _mm512_and_si512(_mm512_srli_epi32(h, n), sixteen); };
      emit(4 * c, Pick32(_mm512_or_si512(_mm512_and_si512(q0, low4), bit(h0, 2 * c)), lo1, hi1));
      emit(4 * c + 1, Pick32(_mm512_or_si512(_mm512_and_si512(q1, low4), bit(h1, 2 * c)), lo1, hi1));
      emit(4 * c + 2, Pick32(_mm512_or_si512(High4(q0), bit(h0, 2 * c + 1)), lo2, hi2));
      emit(4 * c + 3, Pick32(_mm512_or_si512(High4(q1), bit(h1, 2 * c + 1)), lo2, hi2));
    }
  }
};

// q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: ds[k] = d · scales[k] per 16 elements; in
// each half of 128 the four quarters take the low / high nibbles of ql[l], ql[l+32] and bit pairs
// 0, 2, 4, 6 of qh[l]; w = ds · f32(q − 32) (RowQ6_KSimd), computed directly (64 levels).
struct DecQ6_K {
  static constexpr int kElems = ggml::kQK_K, kBytes = sizeof(ggml::BlockQ6_K), kHeadScales = 0;
  template <class Emit>
  static void Run(const uint8_t* b, const HeadScales& /*read here*/, Emit&& emit) {
    const __m512 ds = _mm512_mul_ps(
        _mm512_set1_ps(LoadScale(b + 208)),
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)))));
    alignas(64) float sc[16];
    _mm512_store_ps(sc, ds);
    const __m512i low4 = _mm512_set1_epi32(15), top2 = _mm512_set1_epi32(0x30), bias = _mm512_set1_epi32(32);
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = b + 64 * n;
      const uint8_t* qh = b + 128 + 32 * n;
      __m512i q[4][2];  // [quarter, 16-element half of the quarter]
      for (int h = 0; h < 2; ++h) {
        const __m512i a = Codes(ql + 16 * h), c = Codes(ql + 32 + 16 * h), hb = Codes(qh + 16 * h);
        q[0][h] = _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_and_si512(_mm512_slli_epi32(hb, 4), top2));
        q[1][h] = _mm512_or_si512(_mm512_and_si512(c, low4), _mm512_and_si512(_mm512_slli_epi32(hb, 2), top2));
        q[2][h] = _mm512_or_si512(_mm512_srli_epi32(a, 4), _mm512_and_si512(hb, top2));
        q[3][h] = _mm512_or_si512(_mm512_srli_epi32(c, 4), _mm512_and_si512(_mm512_srli_epi32(hb, 2), top2));
      }
      for (int t = 0; t < 4; ++t) {
        for (int h = 0; h < 2; ++h) {
          const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(q[t][h], bias));
          emit(8 * n + 2 * t + h, _mm512_mul_ps(_mm512_set1_ps(sc[8 * n + 2 * t + h]), v));
        }
      }
    }
  }
};

// y[row0, row1) = W x, 16 rows at a time; tail rows repeat the last row and store only valid lanes.
template <class Dec>
void GemvDecoded(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  const int64_t nb = w.cols / Dec::kElems;
  const size_t ahead = static_cast<size_t>(kPrefetchRows) * w.row_bytes();  // rows are contiguous unless mapped
  for (int64_t j0 = row0; j0 < row1; j0 += 16) {
    const int nj = static_cast<int>(std::min<int64_t>(16, row1 - j0));
    const bool prefetch = !w.row_map && j0 + kPrefetchRows < row1;
    const uint8_t* wr[16];
    for (int j = 0; j < 16; ++j) wr[j] = w.row(std::min<int64_t>(j0 + j, row1 - 1));
    __m512 acc[16];  // [16 rows] lane l: the row's canonical partial sum over k ≡ l (mod 16)
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t blk = 0; blk < nb; ++blk) {
      const float* xb = x + blk * Dec::kElems;
      HeadScales hs[16];  // [16 rows]
      if constexpr (Dec::kHeadScales > 0)
        LoadHeadScales<Dec::kHeadScales>(wr, static_cast<size_t>(blk) * Dec::kBytes, hs);
#pragma GCC unroll 16  // the 16 accumulators stay in registers only if j is unrolled
      for (int j = 0; j < 16; ++j) {
        const uint8_t* b = wr[j] + blk * Dec::kBytes;
        if (prefetch) {
          for (int o = 0; o < Dec::kBytes; o += 64)
            _mm_prefetch(reinterpret_cast<const char*>(b + ahead + o), _MM_HINT_T0);
        }
        __m512& a = acc[j];
        Dec::Run(b, hs[j], [&](int g, __m512 wv) { a = _mm512_fmadd_ps(_mm512_loadu_ps(xb + 16 * g), wv, a); });
      }
    }
    _mm512_mask_storeu_ps(y + j0, TailMask16(nj), ReduceAdd16x16(acc));
  }
}
}  // namespace

bool GemvBlockRowsDecoded(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  switch (w.type) {
    case QuantType::kQ8_0: GemvDecoded<DecQ8_0>(x, w, row0, row1, y); return true;
    case QuantType::kQ4_0: GemvDecoded<DecQ4_0>(x, w, row0, row1, y); return true;
    case QuantType::kQ4_1: GemvDecoded<DecQ4_1>(x, w, row0, row1, y); return true;
    case QuantType::kQ5_0: GemvDecoded<DecQ5_0>(x, w, row0, row1, y); return true;
    case QuantType::kQ5_1: GemvDecoded<DecQ5_1>(x, w, row0, row1, y); return true;
    case QuantType::kIQ4_NL: GemvDecoded<DecIQ4_NL>(x, w, row0, row1, y); return true;
    case QuantType::kMXFP4: GemvDecoded<DecMXFP4>(x, w, row0, row1, y); return true;
    case QuantType::kQ4_K: GemvDecoded<DecQ4_K>(x, w, row0, row1, y); return true;
    case QuantType::kQ5_K: GemvDecoded<DecQ5_K>(x, w, row0, row1, y); return true;
    case QuantType::kQ6_K: GemvDecoded<DecQ6_K>(x, w, row0, row1, y); return true;
    default: return false;  // q2_K, q3_K, iq4_xs: the scratch kernel (ops/matmul.cc)
  }
}
#else
bool GemvBlockRowsDecoded(const float*, const WeightView&, int64_t, int64_t, float*) { return false; }
#endif  // KVAUDIT_MATMUL_AVX512

#endif  // KVAUDIT_ISA_PASS
