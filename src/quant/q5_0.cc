// Q5_0: block = fp16 d, uint32 qh (5th bits), 16 bytes of nibbles; value = (code - 16) * d.
// ggml-quants.c's reference quantizer and dequantizer, and the expanded codes llama.cpp's integer
// dot reads (quant/block_formats.h).
#include "quant/block_formats.h"

#include <cstring>

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockQ5_0);
}  // namespace

// quantize_row_q5_0_ref: d = (signed value of largest |x|, first wins) / -16, code =
// min(31, (int8_t)(x/d + 16.5f)) with the unrounded f32 d; bit 4 of code j goes to qh bit j.
void Q5_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    const float max = LargestMagnitude(x).max;
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(dst, d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = TruncF32ToI8(Rounded(x[j] * id) + 16.5f);
      const int8_t c1 = TruncF32ToI8(Rounded(x[j + 16] * id) + 16.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 31 ? c0 : 31);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 31 ? c1 : 31);
      dst[6 + j] = static_cast<uint8_t>((xi0 & 0x0f) | ((xi1 & 0x0f) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(dst + 2, &qh, 4);  // little-endian, as ggml's memcpy on x86
  }
}

// dequantize_row_q5_0.
void Q5_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = LoadF16(src);
    const uint32_t qh = LoadU32(src + 2);
    for (int j = 0; j < 16; ++j) {
      const int x0 = ((src[6 + j] & 0x0f) | (((qh >> j) << 4) & 0x10)) - 16;
      const int x1 = ((src[6 + j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

// {d, qh[4], qs[16]}: 5-bit codes − 16.
void Q5_0ToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8_t* x = row + b * kBytes;
    out.d[b] = LoadF16(x);
    const uint32_t qh = LoadU32(x + 2);
    for (int j = 0; j < kQK; ++j) out.codes[b * kQK + j] = static_cast<int8_t>(Q5Code(x + 6, qh, j) - 16);
  }
}

}  // namespace kvaudit::ggml
