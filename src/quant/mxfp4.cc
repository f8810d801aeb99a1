// MXFP4 (OCP Microscaling v1.0 fp4, as ggml stores it): block = E8M0 byte e, 16 bytes of nibbles;
// value = kvalues_mxfp4[code] * 2^(e-128) (the doubled E2M1 table times the halved scale).
// ggml-quants.c's reference quantizer (quantize_row_mxfp4_ref) and dequantizer
// (dequantize_row_mxfp4), block_mxfp4 and kvalues_mxfp4 from ggml-common.h, the scale from
// ggml-impl.h ggml_e8m0_to_fp32_half; read at ggml-org/llama.cpp 01243c58 (the same text as at
// 36491e40 and as gpt-oss's MXFP4 GGUFs were written with). A weight type only: no KV format reads
// it; its expanded codes feed llama.cpp's integer dot of MXFP4 weights (engine=llama.cpp).
#include "quant/block_formats.h"

#include <cmath>

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockMxfp4);

// best_index_mxfp4 (ggml-quants.c): the level with the smallest |level*d - x| by a linear scan,
// the first on ties (so -0.25 at d = 0.5 is code 0, 5 at d = 0.5 is code 6 = 4, and a NaN x, whose
// errors all compare false, is code 0). level*d is exact but for overflow to inf (d = 2^127).
int BestIndexMxfp4(float x, float d) {
  int best = 0;
  float best_err = std::fabs(Rounded(kMxfp4Values[0] * d) - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(Rounded(kMxfp4Values[i] * d) - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}
}  // namespace

// quantize_row_mxfp4_ref: amax = the largest |x| (a NaN is never taken); e = (uint8_t)(floorf(
// log2f(amax)) - 2 + 127), or 0 for an all-zero block, so amax's power of two lands in the top
// codes (4, 6 of E2M1: 8, 12 doubled) and larger values clamp to ±12·d; then each x takes its
// nearest level. The exponent keeps ggml's float arithmetic as written:
// - log2f rounds: an amax just below 2^k (7.9999995) gives log2f = k, one exponent higher than
//   frexp's, and is coded as 8 at d = 1, not clamped to 6 at d = 0.5;
// - the cast to uint8_t is GCC's on x86-64 (TruncF32ToU8): amax below 2^-125 wraps (2^-126 gives
//   -1, e = 255, d = 2^127: every code 0), and an infinite amax gives e = 0.
void Mxfp4Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    const uint8_t e = amax > 0.0f ? TruncF32ToU8(std::floor(std::log2(amax)) - 2 + 127) : 0;
    const float d = E8M0ToF32Half(e);
    dst[0] = e;
    for (int j = 0; j < 16; ++j) {
      dst[1 + j] = static_cast<uint8_t>(BestIndexMxfp4(x[j], d) | (BestIndexMxfp4(x[j + 16], d) << 4));
    }
  }
}

// dequantize_row_mxfp4: y = f32(kvalues_mxfp4[code]) * d, exact (subnormal d included) but where
// it overflows: the top levels are inf from e = 253 (12 · 2^125), all but ±1 at e = 255. Code 8
// (fp4's -0) is +0.
void Mxfp4Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = E8M0ToF32Half(src[0]);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(kMxfp4Values[src[1 + j] & 0x0f]) * d;
      y[j + 16] = static_cast<float>(kMxfp4Values[src[1 + j] >> 4]) * d;
    }
  }
}

// {e, qs[16]}: codes index kvalues_mxfp4, d = E8M0ToF32Half(e), so code·d is the dequantized value
// (the scale ggml_vec_dot_mxfp4_q8_0 and the repacked mxfp4 kernels multiply by).
void Mxfp4ToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    out.d[b] = E8M0ToF32Half(row[b * kBytes]);
    NibbleCodes(row + b * kBytes + 1, kMxfp4Values, out.codes + b * kQK);
  }
}

}  // namespace kvaudit::ggml
