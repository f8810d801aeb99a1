// Q8_0: block = fp16 d, 32 int8 codes; value = code * d.
// ggml-quants.c's reference quantizer and dequantizer, and the expanded codes llama.cpp's integer
// dot reads (quant/block_formats.h).
#include "quant/block_formats.h"

#include <cmath>
#include <cstring>

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockQ8_0);
}  // namespace

// quantize_row_q8_0_ref: d = amax / 127, id = 1/d, code = roundf(x * id) (half away from zero).
// (The x86 ggml-cpu from_float differs: see quant/q8_activation.h QuantizeQ8_0RowX86.)
void Q8_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    const float d = AbsMaxMacro(x) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreF16(dst, d);
    for (int j = 0; j < kQK; ++j) {
      // roundf result is within [-127, 127] for finite input; the int8 store is C's conversion.
      dst[2 + j] = static_cast<uint8_t>(TruncF32ToI8(std::round(x[j] * id)));
    }
  }
}

// dequantize_row_q8_0.
void Q8_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = LoadF16(src);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

// block_q8_0 {d, qs[32]}: the codes as stored.
void Q8_0ToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const uint8_t* x = row + b * kBytes;
    out.d[b] = LoadF16(x);
    std::memcpy(out.codes + b * kQK, x + 2, kQK);
  }
}

}  // namespace kvaudit::ggml
