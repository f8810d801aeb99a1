// Shared pieces of llama.cpp's 32-element block formats (ggml/src/ggml-common.h layouts, the
// arithmetic helpers ggml-quants.c relies on). Used by kv/formats/{q8_0,q4_0,q4_1,q5_0,q5_1,iq4_nl}
// and kv/formats/q8_activation. Blocks are read and written as bytes (memcpy), never through struct
// pointers, so rows may start at any offset in the cache.
#pragma once

#include "ops/simd.h"  // first: wraps <immintrin.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/half.h"
#include "kv/formats/codec_kernels.h"
#include "kv/formats/row_codec.h"

namespace kvaudit::ggml {

inline constexpr int kQK = 32;  // elements per block (QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 = QK4_NL)

// Byte layouts, in ggml-common.h field order; `d`/`m`/`s` are IEEE fp16.
struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };                     // code j | code j+16 << 4
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };      // qh: bit j = bit 4 of code j
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockQ8_1 { uint16_t d, s; int8_t qs[32]; };                   // s = fp16(d * Σ qs)
struct BlockIq4Nl { uint16_t d; uint8_t qs[16]; };                    // codes index kIq4NlValues
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36 &&
              sizeof(BlockIq4Nl) == 18, "ggml block sizes (ggml-common.h static_asserts)");

// kvalues_iq4nl (ggml-common.h).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

inline float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}
inline void StoreF16(uint8_t* p, float f) {
  const uint16_t h = F32ToF16(f);
  std::memcpy(p, &h, 2);
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 32 codes of 16 nibble bytes (low nibble = element j, high = j + 16), each looked up in lut.
inline void NibbleCodes(const uint8_t* qs, const int8_t* lut, int8_t* c) {
  for (int j = 0; j < 16; ++j) {
    c[j] = lut[qs[j] & 0x0f];
    c[j + 16] = lut[qs[j] >> 4];
  }
}

// Code j in [0, 32) of a 5-bit block (dequantize_row_q5_*): nibble | bit j of qh << 4.
inline int Q5Code(const uint8_t* qs, uint32_t qh, int j) {
  return j < 16 ? ((qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10)) : ((qs[j - 16] >> 4) | ((qh >> (j - 4)) & 0x10));
}

// Forces `p` to be rounded to f32 before it feeds an add. ggml-base (ggml-quants.c) is compiled
// without FMA, so `x*id + 8.5f` there is two roundings; GCC contracts such expressions into one
// FMA under -march=native even in ISO C++ mode, which would change codes at rounding ties.
inline float Rounded(float p) {
#if defined(__GNUC__) && defined(__AVX512F__)
  asm("" : "+v"(p));
#elif defined(__GNUC__) && (defined(__x86_64__) || defined(__SSE2__))
  asm("" : "+x"(p));
#else
  volatile float v = p;
  p = v;
#endif
  return p;
}

// C's `(int8_t)(float)` / `(uint8_t)(float)` as GCC compiles it on x86-64 (cvttss2si to int32,
// keep the low byte): truncation toward zero; NaN or out-of-int32-range gives INT32_MIN (low byte
// 0). Only NaN/inf inputs reach the out-of-range case; mirroring it keeps those bytes identical
// without undefined behaviour.
inline int32_t TruncF32ToI32(float v) {
  if (!(v > -2147483904.0f && v < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(v);
}
inline int8_t TruncF32ToI8(float v) { return static_cast<int8_t>(static_cast<uint32_t>(TruncF32ToI32(v)) & 0xffu); }
inline uint8_t TruncF32ToU8(float v) { return static_cast<uint8_t>(static_cast<uint32_t>(TruncF32ToI32(v)) & 0xffu); }

// The RowCodec plumbing of a block format, from its byte-level quantizer and dequantizer: rows
// of n / 32 blocks of kBlockBytes. Make<Kernels>(name) gives the codec with Kernels' dot/axpy
// (kv/formats/codec_kernels.h: the format's decoder, or the scalar twins).
template <int kBlockBytes, void (*QuantizeRow)(const float*, uint8_t*, int64_t),
          void (*DequantizeRow)(const uint8_t*, float*, int64_t)>
struct BlockFormat {
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n / kQK) * kBlockBytes; }
  static double Bits(int64_t, const CodecParams&) { return kBlockBytes * 8.0 / kQK; }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) { QuantizeRow(x, dst, n); }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) { DequantizeRow(src, y, n); }
  template <class Kernels>
  static RowCodec Make(std::string_view name) {
    return MakeRowCodec<Kernels>(name, kQK, RowBytes, Bits, Quantize, Dequantize);
  }
};

#if defined(__AVX512F__)
// Rounded() for a vector: the product stays a separate rounding before an add (no contraction).
inline __m512 RoundedV(__m512 p) {
  asm("" : "+v"(p));
  return p;
}

// fp16 scale -> broadcast f32 (exact; F16C's vcvtph2ps when the build has it).
inline __m512 BroadcastF16(const uint8_t* p) {
#if defined(__F16C__)
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm512_set1_ps(_cvtsh_ss(h));
#else
  return _mm512_set1_ps(LoadF16(p));
#endif
}
// 16 packed nibble bytes -> 16 int32 lanes holding the whole byte; lane j: low nibble = code j,
// bits 4..7 = code j+16.
inline __m512i LoadNibbleBytes(const uint8_t* qs) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
}

// The block decoder shared by the 18-byte "fp16 d + 16 nibble bytes" blocks whose value is
// d · lut[code] (q4_0: lut = code − 8; iq4_nl: the non-linear codebook), for kv/formats/codec_kernels.h:
// v[0..1] = the block's 32 values, each rounded exactly as the scalar dequantizer rounds it.
// vpermps indexes the 16-entry f32 table with each lane's low 4 bits, so the low nibble needs no mask.
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockIq4Nl) == 18, "NibbleLutDecode assumes 18-byte blocks");
// The table is scaled once per block (lut·d, the same products the dequantizer forms), so the 32
// values cost two lookups and one multiply.
inline void NibbleLutDecode(const uint8_t* blk, __m512 lut, __m512* v) {
  const __m512 scaled = _mm512_mul_ps(lut, BroadcastF16(blk));
  const __m512i bytes = LoadNibbleBytes(blk + 2);
  v[0] = _mm512_permutexvar_ps(bytes, scaled);
  v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), scaled);
}

// The 32 codes of a 5-bit block (q5_0, q5_1) looked up in a 32-entry f32 table t0 | t1: 5-bit
// index = nibble | (qh bit j) << 4 (vpermt2ps: index bit 4 picks the table half). v[0..1]: codes
// 0..15 and 16..31.
inline void FiveBitLookup(const uint8_t* qh_bytes, const uint8_t* qs, __m512 t0, __m512 t1, __m512* v) {
  const uint32_t qh = LoadU32(qh_bytes);
  const __m512i bytes = LoadNibbleBytes(qs);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i ilo = _mm512_and_si512(bytes, _mm512_set1_epi32(0x0f));
  __m512i ihi = _mm512_srli_epi32(bytes, 4);
  ilo = _mm512_mask_or_epi32(ilo, static_cast<__mmask16>(qh & 0xffffu), ilo, sixteen);
  ihi = _mm512_mask_or_epi32(ihi, static_cast<__mmask16>(qh >> 16), ihi, sixteen);
  v[0] = _mm512_permutex2var_ps(t0, ilo, t1);
  v[1] = _mm512_permutex2var_ps(t0, ihi, t1);
}
#endif

}  // namespace kvaudit::ggml
