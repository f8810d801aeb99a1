// ggml's block formats, byte for byte (ggml/src/ggml-common.h block_* structs and
// static_asserts), and the scalar helpers ggml-quants.c's reference functions rely on. Weights
// (quant/dequantize.h, ops' matmul) and the KV cache (kv/formats) read the same definitions.
// Blocks are read and written as bytes (memcpy), never through struct pointers, so rows may start
// at any offset; the structs only document and size the layouts.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/half.h"

namespace kvaudit::ggml {

inline constexpr int kQK = 32;     // QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 = QK4_NL = QK_MXFP4
inline constexpr int kQK_K = 256;  // QK_K: the K-quants' and iq4_xs's super-block

// Byte layouts, in ggml-common.h field order; `d`/`m`/`s`/`dmin` are IEEE fp16.
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
struct BlockMxfp4 {
  uint8_t e;  // E8M0: a power-of-two scale, no sign or mantissa
  uint8_t qs[16];
};  // codes index kMxfp4Values, nibbles as q4_0's
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
// The K-quants' activation rows (ggml-common.h block_q8_K): d is an IEEE f32, not fp16.
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];  // Σ qs over each 16 consecutive codes
};
struct BlockIq4Xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
                  sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36 &&
                  sizeof(BlockIq4Nl) == 18 && sizeof(BlockMxfp4) == 17,
              "ggml block sizes (ggml-common.h static_asserts)");
static_assert(sizeof(BlockQ8_K) == 292, "block_q8_K: f32 d, 256 codes, 16 int16 sums");
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
                  sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIq4Xs) == 136,
              "ggml super-block sizes (ggml-common.h static_asserts)");
static_assert(offsetof(BlockQ2_K, d) == 80 && offsetof(BlockQ2_K, dmin) == 82 && offsetof(BlockQ3_K, d) == 108 &&
                  offsetof(BlockQ6_K, d) == 208,
              "the fp16 fields at the end of q2_K, q3_K and q6_K blocks (quant/quant_type.h f16_fields)");

// kvalues_iq4nl (ggml-common.h): the 16 levels of the non-linear 4-bit grid (iq4_nl, iq4_xs).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// The same levels as f32, for the SIMD lookups (every level is a small integer: exact).
struct Iq4NlLevelsF {
  float v[16];
};
inline constexpr Iq4NlLevelsF kIq4NlValuesF = [] {
  Iq4NlLevelsF t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<float>(kIq4NlValues[i]);
  return t;
}();

// kvalues_mxfp4 (ggml-common.h): the 16 E2M1 (OCP MX v1.0 fp4) values doubled to integers
// 0 ±1 ±2 ±3 ±4 ±6 ±8 ±12 (code 8, fp4's -0, is 0), so the block scale is halved to match
// (E8M0ToF32Half).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// The same levels as f32, for the SIMD lookups (small integers: exact).
struct Mxfp4LevelsF {
  float v[16];
};
inline constexpr Mxfp4LevelsF kMxfp4ValuesF = [] {
  Mxfp4LevelsF t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<float>(kMxfp4Values[i]);
  return t;
}();

// ggml_e8m0_to_fp32_half (ggml/src/ggml-impl.h): 2^(e-128) for every byte e, written as ggml
// writes it: e < 2 as the subnormal patterns 0x00200000 << e (2^-128, 2^-127), else the normal
// exponent field e - 1. Never NaN or inf (e = 255 is 2^127; ggml does not give 0xFF a NaN).
inline float E8M0ToF32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A block row in "expanded" form, the common input of llama.cpp's emulated integer dot
// (kv/llamacpp): codes [n] int8 (q4_0: nibble − 8; q5_0: 5-bit − 16; q4_1/q5_1: unsigned code;
// q8_0: code; iq4_nl: kvalues_iq4nl[nibble]), d [n/32] = fp16(d) as f32, m [n/32] = fp16(m)
// (q4_1/q5_1) or fp16(s) (q8_1 activation rows), else unused.
struct BlockCodes {
  int8_t* codes;
  float* d;
  float* m;
};

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float LoadF16(const uint8_t* p) { return F16ToF32(LoadU16(p)); }
inline void StoreF16(uint8_t* p, float f) {
  const uint16_t h = F32ToF16(f);
  std::memcpy(p, &h, 2);
}

// The scans ggml-quants.c's reference quantizers start a 32-element block with. Their NaN handling
// differs, so they are kept apart:
// - q4_0, q5_0, iq4_nl: the largest |x| and its signed value, the first on ties (a NaN is never taken);
struct SignedAbsMax {
  float amax = 0.0f, max = 0.0f;
};
inline SignedAbsMax LargestMagnitude(const float* x) {
  SignedAbsMax m;
  for (int j = 0; j < kQK; ++j) {
    if (m.amax < std::fabs(x[j])) {
      m.amax = std::fabs(x[j]);
      m.max = x[j];
    }
  }
  return m;
}
// - q8_0, q8_1: MAX(amax, fabsf(x)) (ggml's macro: a NaN becomes the running value);
inline float AbsMaxMacro(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;
  }
  return amax;
}
// - q4_1, q5_1: min and max from ±FLT_MAX (a NaN is never taken).
inline void MinMax(const float* x, float* min, float* max) {
  *min = FLT_MAX, *max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
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

// The 12 packed scale bytes of q4_K/q5_K hold eight 6-bit (scale, min) pairs: pairs 0..3 in the low
// 6 bits of bytes 0..3 / 4..7; pairs 4..7 take their low 4 bits from bytes 8..11 and their top
// 2 bits from the spare top bits of bytes 0..7 (get_scale_min_k4 in ggml-quants.c).
inline void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// ScaleMinK4 for all eight sub-blocks at once, byte-parallel on the three little-endian scale words
// (ggml's kmask1/2/3 steps, ggml-cpu/arch/x86/quants.c ggml_vec_dot_q4_K_q8_K): bytes 0..7 of
// sm[0..1] are the scales of sub-blocks 0..7, bytes 0..7 of sm[2..3] their mins.
inline void ScaleMinK4Words(const uint8_t* scales, uint32_t sm[4]) {
  const uint32_t w0 = LoadU32(scales), w1 = LoadU32(scales + 4), w2 = LoadU32(scales + 8);
  const uint32_t six = 0x3F3F3F3Fu, nib = 0x0F0F0F0Fu, two = 0x03030303u;
  sm[0] = w0 & six;                                      // sc 0..3
  sm[1] = (w2 & nib) | (((w0 >> 6) & two) << 4);         // sc 4..7
  sm[2] = w1 & six;                                      // m 0..3
  sm[3] = ((w2 >> 4) & nib) | (((w1 >> 6) & two) << 4);  // m 4..7
}

// The 12 scale bytes of q3_K hold sixteen 6-bit scales, biased by 32: scale k takes its low 4 bits
// from byte k (k < 8, low nibble) or byte k-8 (high nibble), and its top 2 bits from bits
// 2(k/4)..2(k/4)+1 of byte 8 + k%4 (the aux[] shuffle of dequantize_row_q3_K in ggml-quants.c).
inline int ScaleK3(int k, const uint8_t* s) {
  const int lo = k < 8 ? s[k] & 0x0F : s[k - 8] >> 4;
  const int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (lo | (hi << 4)) - 32;
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
// nearbyint in the default rounding mode (round half to even) without a libm call: below 2^23 in
// magnitude, adding and subtracting 2^23 with v's sign leaves the nearest integer, ties to even
// (2^23 is even, and the sum's ulp is 1), the sign of a zero result restored; larger magnitudes,
// infinities and NaN are returned as they are (integers already, or not numbers).
inline float RoundHalfEven(float v) {
  if (!(std::fabs(v) < 8388608.0f)) return v;
  const float big = std::copysign(8388608.0f, v);
  return std::copysign((v + big) - big, v);
}
inline int32_t TruncF32ToI32(float v) {
  if (!(v > -2147483904.0f && v < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(v);
}
inline int8_t TruncF32ToI8(float v) { return static_cast<int8_t>(static_cast<uint32_t>(TruncF32ToI32(v)) & 0xffu); }
inline uint8_t TruncF32ToU8(float v) { return static_cast<uint8_t>(static_cast<uint32_t>(TruncF32ToI32(v)) & 0xffu); }

}  // namespace kvaudit::ggml
