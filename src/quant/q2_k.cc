// Q2_K: super-blocks of 256 elements, 2-bit codes with a 4-bit scale and min per 16.
// ggml-quants.c's reference dequantizer (weights only: no KV cache stores this type).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

#include "base/fp_contract_off.h"  // ggml's two roundings for d*q - m

namespace kvaudit::ggml {

// block_q2_K {u8 scales[16]; u8 qs[64]; f16 d, dmin}: scales[k] holds the 4-bit scale (low) and
// min (high) of elements 16k..16k+15. Each 128 elements use 32 bytes of qs: element 32j + l of
// the half (j = 0..3, l = 0..31) is bits 2j..2j+1 of qs[l]; y = (d*sc)*q - (dmin*m), as
// dequantize_row_q2_K in ggml-quants.c.
void Q2_KDequantize(const uint8_t* b, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, b += sizeof(BlockQ2_K)) {
    const uint8_t* scales = b;
    const uint8_t* q = b + 16;
    const float d = LoadF16(b + 80);
    const float dmin = LoadF16(b + 82);
    for (int n = 0; n < kQK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = *scales++;
          const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 16 * half; l < 16 * half + 16; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

}  // namespace kvaudit::ggml
