// Q4_1: block = fp16 d, fp16 m, 16 bytes of nibbles; value = code * d + m.
// ggml-quants.c's reference quantizer and dequantizer, and the expanded codes llama.cpp's integer
// dot reads (quant/block_formats.h).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockQ4_1);
constexpr int8_t kCodes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}  // namespace

// quantize_row_q4_1_ref: d = (max - min) / 15, code = min(15, (int8_t)((x - min)/d + 0.5f)) with
// the unrounded f32 min and d; fp16(d), fp16(min) stored.
void Q4_1Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    float min, max;
    MinMax(x, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(dst, d);
    StoreF16(dst + 2, min);
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = TruncF32ToI8(Rounded((x[j] - min) * id) + 0.5f);
      const int8_t c1 = TruncF32ToI8(Rounded((x[j + 16] - min) * id) + 0.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 15 ? c0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 15 ? c1 : 15);
      dst[4 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

// dequantize_row_q4_1: x*d + m, two roundings (ggml-base has no FMA).
void Q4_1Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = LoadF16(src);
    const float m = LoadF16(src + 2);
    for (int j = 0; j < 16; ++j) {
      y[j] = Rounded(static_cast<float>(src[4 + j] & 0x0f) * d) + m;
      y[j + 16] = Rounded(static_cast<float>(src[4 + j] >> 4) * d) + m;
    }
  }
}

// {d, m, qs[16]}: unsigned codes; the vec_dot adds m · s of the q8_1 query block.
void Q4_1ToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    out.d[b] = LoadF16(row + b * kBytes);
    out.m[b] = LoadF16(row + b * kBytes + 2);
    NibbleCodes(row + b * kBytes + 4, kCodes, out.codes + b * kQK);
  }
}

}  // namespace kvaudit::ggml
