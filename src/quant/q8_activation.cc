// llama.cpp's activation quantizers and integer vec_dots (q8_activation.h), scalar, as ggml's
// *_generic reference functions are: compiled once, for the baseline, on every kernel path. The
// expanded x86 quantizer's SIMD twin is quant/q8_activation_simd.cc.
#include "quant/q8_activation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/block_formats.h"
#include "quant/ggml_blocks.h"

namespace kvaudit {
namespace {

constexpr int kQK = ggml::kQK;

// x86's MAXPS / MAXSS per lane: SRC1 > SRC2 ? SRC1 : SRC2, so an unordered pair (a NaN on either
// side) gives the second operand (Intel SDM, MAXPS).
inline float MaxPs(float a, float b) { return a > b ? a : b; }

// The AVX2 branch's max(|x|) of a block, in its order: 8 lanes over the 4 vectors of 8, then the
// halves (extractf128 hi against lo), movehl, movehdup (arch/x86/quants.c quantize_row_q8_0).
float AbsMaxX86(const float* x) {
  float lane[8];  // [8] maxAbs
  for (int l = 0; l < 8; ++l) lane[l] = std::fabs(x[l]);
  for (int v = 1; v < 4; ++v)
    for (int l = 0; l < 8; ++l) lane[l] = MaxPs(lane[l], std::fabs(x[8 * v + l]));
  float m4[4];  // [4] max4 = max(hi, lo)
  for (int l = 0; l < 4; ++l) m4[l] = MaxPs(lane[4 + l], lane[l]);
  const float m0 = MaxPs(m4[0], m4[2]), m1 = MaxPs(m4[1], m4[3]);  // max(max4, movehl(max4, max4))
  return MaxPs(m0, m1);                                            // max_ss(max4, movehdup(max4))
}

// cvtps2dq of an integral value (= truncation, with NaN, ±inf and values outside int32 giving
// INT32_MIN: TruncF32ToI32), then packs_epi32 and packs_epi16: saturation to int8.
inline int8_t PackedI8(float v) { return static_cast<int8_t>(std::clamp(ggml::TruncF32ToI32(v), -128, 127)); }

// One q8 block's codes; returns Σq. x86 = the AVX2 branch (127/amax, round half to even, packs),
// ref = quantize_row_q8_1_ref (1/d, roundf, C's conversion to int8).
int QuantizeCodes(const float* x, int8_t* qs, float amax, bool x86) {
  int sum = 0;
  if (x86) {
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    // Round half to even = _mm256_round_ps(_MM_ROUND_NEAREST).
    for (int j = 0; j < kQK; ++j) qs[j] = PackedI8(ggml::RoundHalfEven(x[j] * id));
  } else {
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) qs[j] = ggml::TruncF32ToI8(std::round(x[j] * id));
  }
  for (int j = 0; j < kQK; ++j) sum += qs[j];
  return sum;
}

void QuantizeQ8(const float* x, uint8_t* dst, int64_t n, bool q8_1, bool x86) {
  const int bytes = q8_1 ? 36 : 34;
  const int qs_off = q8_1 ? 4 : 2;
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += bytes) {
    const float amax = x86 ? AbsMaxX86(x) : ggml::AbsMaxMacro(x);
    const float d = amax / 127;  // both variants: maxScalar / 127.f
    int8_t qs[kQK];              // [32]
    const int sum = QuantizeCodes(x, qs, amax, x86);
    ggml::StoreF16(dst, d);
    if (q8_1) ggml::StoreF16(dst + 2, static_cast<float>(sum) * d);  // s = fp16(sum*d)
    std::memcpy(dst + qs_off, qs, kQK);
  }
}

inline int8_t Q8(const uint8_t* p, int j) { return static_cast<int8_t>(p[j]); }

// Block accumulation, as the *_generic functions write it: sumf += sumi*dx*dy (q4_0: (sumi*dx)*dy;
// q5_0/q4_1/q5_1: (dx*dy)*sumi; q8_0: sumi*(dx*dy); iq4_nl: (dy*dx)*sumi), each product rounded
// to f32 and no FMA. The x86 AVX2 versions instead keep 8 f32 lanes of (dx*dy)·partial-int-sums
// with FMA and add them at the end: the same exact integer sums, f32 rounding order differs.
inline float R(float v) { return ggml::Rounded(v); }

}  // namespace

void QuantizeQ8_0RowRef(const float* x, uint8_t* dst, int64_t n) { ggml::Q8_0Quantize(x, dst, n); }
void QuantizeQ8_1RowRef(const float* x, uint8_t* dst, int64_t n) { QuantizeQ8(x, dst, n, true, false); }
void QuantizeQ8_0RowX86(const float* x, uint8_t* dst, int64_t n) { QuantizeQ8(x, dst, n, false, true); }
void QuantizeQ8_1RowX86(const float* x, uint8_t* dst, int64_t n) { QuantizeQ8(x, dst, n, true, true); }

void QuantizeQ8RowX86CodesScalar(const float* x, int64_t n, bool q8_1, ggml::BlockCodes out) {
  const int qs_off = q8_1 ? 4 : 2;
  uint8_t block[36];  // one q8_0 (34 B) or q8_1 (36 B) block
  for (int64_t b = 0; b < n / kQK; ++b) {
    QuantizeQ8(x + b * kQK, block, kQK, q8_1, true);
    out.d[b] = ggml::LoadF16(block);
    if (q8_1) out.m[b] = ggml::LoadF16(block + 2);
    std::memcpy(out.codes + b * kQK, block + qs_off, kQK);
  }
}

void QuantizeQ8_KRow(const float* x, ggml::BlockQ8_K* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK_K; ++b, x += ggml::kQK_K) {
    ggml::BlockQ8_K& y = dst[b];
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < ggml::kQK_K; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    y = {};
    if (amax == 0.0f) continue;
    const float iscale = -127.f / max;
    // nearest_int adds 1.5·2^23 to the rounded product: round half to even, as nearbyint.
    for (int j = 0; j < ggml::kQK_K; ++j) {
      y.qs[j] = static_cast<int8_t>(std::min(127, static_cast<int>(ggml::RoundHalfEven(R(iscale * x[j])))));
    }
    for (int g = 0; g < ggml::kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y.qs[16 * g + j];
      y.bsums[g] = static_cast<int16_t>(sum);
    }
    y.d = 1 / iscale;
  }
}

// ggml_vec_dot_q4_0_q8_0_generic.
float VecDotQ4_0Q8_0(const uint8_t* x, const uint8_t* y, int64_t n) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += 18, y += 34) {
    int sumi0 = 0, sumi1 = 0;
    for (int j = 0; j < 16; ++j) {
      sumi0 += ((x[2 + j] & 0x0f) - 8) * Q8(y + 2, j);
      sumi1 += ((x[2 + j] >> 4) - 8) * Q8(y + 2, j + 16);
    }
    sumf += R(R(static_cast<float>(sumi0 + sumi1) * ggml::LoadF16(x)) * ggml::LoadF16(y));
  }
  return sumf;
}

// ggml_vec_dot_q4_1_q8_1_generic.
float VecDotQ4_1Q8_1(const uint8_t* x, const uint8_t* y, int64_t n) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += 20, y += 36) {
    int sumi0 = 0, sumi1 = 0;
    for (int j = 0; j < 16; ++j) {
      sumi0 += (x[4 + j] & 0x0f) * Q8(y + 4, j);
      sumi1 += (x[4 + j] >> 4) * Q8(y + 4, j + 16);
    }
    const float dd = R(ggml::LoadF16(x) * ggml::LoadF16(y));
    sumf += R(R(dd * static_cast<float>(sumi0 + sumi1)) + R(ggml::LoadF16(x + 2) * ggml::LoadF16(y + 2)));
  }
  return sumf;
}

// ggml_vec_dot_q5_0_q8_0_generic.
float VecDotQ5_0Q8_0(const uint8_t* x, const uint8_t* y, int64_t n) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += 22, y += 34) {
    const uint32_t qh = ggml::LoadU32(x + 2);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += (ggml::Q5Code(x + 6, qh, j) - 16) * Q8(y + 2, j);
    sumf += R(R(ggml::LoadF16(x) * ggml::LoadF16(y)) * static_cast<float>(sumi));
  }
  return sumf;
}

// ggml_vec_dot_q5_1_q8_1_generic.
float VecDotQ5_1Q8_1(const uint8_t* x, const uint8_t* y, int64_t n) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += 24, y += 36) {
    const uint32_t qh = ggml::LoadU32(x + 4);
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += ggml::Q5Code(x + 8, qh, j) * Q8(y + 4, j);
    const float dd = R(ggml::LoadF16(x) * ggml::LoadF16(y));
    sumf += R(R(dd * static_cast<float>(sumi)) + R(ggml::LoadF16(x + 2) * ggml::LoadF16(y + 2)));
  }
  return sumf;
}

// ggml_vec_dot_q8_0_q8_0_generic.
float VecDotQ8_0Q8_0(const uint8_t* x, const uint8_t* y, int64_t n) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += 34, y += 34) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += Q8(x + 2, j) * Q8(y + 2, j);
    sumf += R(static_cast<float>(sumi) * R(ggml::LoadF16(x) * ggml::LoadF16(y)));
  }
  return sumf;
}

// ggml_vec_dot_iq4_nl_q8_0_generic.
float VecDotIq4NlQ8_0(const uint8_t* x, const uint8_t* y, int64_t n) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += 18, y += 34) {
    const float d = R(ggml::LoadF16(y) * ggml::LoadF16(x));
    int sumi1 = 0, sumi2 = 0;
    for (int j = 0; j < 16; ++j) {
      sumi1 += Q8(y + 2, j) * ggml::kIq4NlValues[x[2 + j] & 0x0f];
      sumi2 += Q8(y + 2, j + 16) * ggml::kIq4NlValues[x[2 + j] >> 4];
    }
    sumf += R(d * static_cast<float>(sumi1 + sumi2));
  }
  return sumf;
}

}  // namespace kvaudit
