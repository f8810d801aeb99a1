// Q4_0: block = fp16 d, 16 bytes of nibbles; value = (code - 8) * d.
// ggml-quants.c's reference quantizer and dequantizer, and the expanded codes llama.cpp's integer
// dot reads (quant/block_formats.h).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockQ4_0);
constexpr int8_t kCodes[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
}  // namespace

// quantize_row_q4_0_ref: d = (signed value of largest |x|, first wins) / -8, codes
// min(15, (int8_t)(x/d + 8.5f)) computed with the unrounded f32 d; d stored as fp16.
void Q4_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    const float max = LargestMagnitude(x).max;
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(dst, d);
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = TruncF32ToI8(Rounded(x[j] * id) + 8.5f);
      const int8_t c1 = TruncF32ToI8(Rounded(x[j + 16] * id) + 8.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 15 ? c0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 15 ? c1 : 15);
      dst[2 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

// dequantize_row_q4_0.
void Q4_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = LoadF16(src);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((src[2 + j] & 0x0f) - 8) * d;
      y[j + 16] = static_cast<float>((src[2 + j] >> 4) - 8) * d;
    }
  }
}

// {d, qs[16]}: codes − 8.
void Q4_0ToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    out.d[b] = LoadF16(row + b * kBytes);
    NibbleCodes(row + b * kBytes + 2, kCodes, out.codes + b * kQK);
  }
}

}  // namespace kvaudit::ggml
