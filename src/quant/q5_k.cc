// Q5_K: super-blocks of 256 elements, 5-bit codes with a 6-bit scale and min per 32.
// ggml-quants.c's reference dequantizer (weights only: no KV cache stores this type).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

#include "base/fp_contract_off.h"  // ggml's two roundings for d*q - m

namespace kvaudit::ggml {

// block_q5_K {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: as q4_K plus a 5th bit from
// qh[l], bit 2c for the low-nibble half and bit 2c+1 for the high-nibble half.
void Q5_KDequantize(const uint8_t* b, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, b += sizeof(BlockQ5_K)) {
    const float d = LoadF16(b);
    const float dmin = LoadF16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* ql = b + 48;
    uint8_t u1 = 1, u2 = 2;
    for (int c = 0; c < kQK_K / 64; ++c, ql += 32, u1 <<= 2, u2 <<= 2) {
      int sc, m;
      ScaleMinK4(2 * c, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      ScaleMinK4(2 * c + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
    }
  }
}

}  // namespace kvaudit::ggml
