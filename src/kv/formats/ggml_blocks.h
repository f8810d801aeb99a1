// Shared pieces of llama.cpp's 32-element block formats (ggml/src/ggml-common.h layouts, the
// arithmetic helpers ggml-quants.c relies on). Used by kv/formats/{q8_0,q4_0,q4_1,q5_0,q5_1,iq4_nl}
// and kv/formats/q8_activation. Blocks are read and written as bytes (memcpy), never through struct
// pointers, so rows may start at any offset in the cache. The AVX-512 decoding helpers are per
// kernel path: kv/formats/ggml_blocks_simd.inl.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "base/half.h"
#include "kv/formats/codec_kernels.h"
#include "kv/formats/row_codec.h"

namespace kvaudit::ggml {

inline constexpr int kQK = 32;  // elements per block (QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 = QK4_NL)

// Byte layouts, in ggml-common.h field order; `d`/`m`/`s` are IEEE fp16.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};  // code j | code j+16 << 4
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};  // qh: bit j = bit 4 of code j
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[32];
};  // s = fp16(d * Σ qs)
struct BlockIq4Nl {
  uint16_t d;
  uint8_t qs[16];
};  // codes index kIq4NlValues
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
                  sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36 &&
                  sizeof(BlockIq4Nl) == 18,
              "ggml block sizes (ggml-common.h static_asserts)");

// kvalues_iq4nl (ggml-common.h).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

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
// (Scalar and defined once, for the baseline: "+x" names an SSE register, which every path has;
// the AVX-512 kernels' RoundedV is in kv/formats/ggml_blocks_simd.inl.h.)
inline float Rounded(float p) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__SSE2__))
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

}  // namespace kvaudit::ggml
