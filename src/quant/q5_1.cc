// Q5_1: block = fp16 d, fp16 m, uint32 qh (5th bits), 16 bytes of nibbles; value = code * d + m.
// ggml-quants.c's reference quantizer and dequantizer, and the expanded codes llama.cpp's integer
// dot reads (quant/block_formats.h).
#include "quant/block_formats.h"

#include <cstring>

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockQ5_1);
}  // namespace

// quantize_row_q5_1_ref: d = (max - min) / 31, code = (uint8_t)((x - min)/d + 0.5f) (no clamp in
// ggml: the argument stays below 32 for finite input) with the unrounded f32 min and d.
void Q5_1Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    float min, max;
    MinMax(x, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(dst, d);
    StoreF16(dst + 2, min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t xi0 = TruncF32ToU8(Rounded((x[j] - min) * id) + 0.5f);
      const uint8_t xi1 = TruncF32ToU8(Rounded((x[j + 16] - min) * id) + 0.5f);
      dst[8 + j] = static_cast<uint8_t>((xi0 & 0x0f) | ((xi1 & 0x0f) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(dst + 4, &qh, 4);  // little-endian, as ggml's memcpy on x86
  }
}

// dequantize_row_q5_1.
void Q5_1Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = LoadF16(src);
    const float m = LoadF16(src + 2);
    const uint32_t qh = LoadU32(src + 4);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (src[8 + j] & 0x0f) | (((qh >> j) << 4) & 0x10);
      const int x1 = (src[8 + j] >> 4) | ((qh >> (j + 12)) & 0x10);
      y[j] = Rounded(static_cast<float>(x0) * d) + m;  // x*d + m, two roundings (no FMA)
      y[j + 16] = Rounded(static_cast<float>(x1) * d) + m;
    }
  }
}

// {d, m, qh[4], qs[16]}: unsigned 5-bit codes; the vec_dot adds m · s of the q8_1 query block.
void Q5_1ToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8_t* x = row + b * kBytes;
    out.d[b] = LoadF16(x);
    out.m[b] = LoadF16(x + 2);
    const uint32_t qh = LoadU32(x + 4);
    for (int j = 0; j < kQK; ++j) out.codes[b * kQK + j] = static_cast<int8_t>(Q5Code(x + 8, qh, j));
  }
}

}  // namespace kvaudit::ggml
