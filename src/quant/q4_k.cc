// Q4_K: super-blocks of 256 elements, 4-bit codes with a 6-bit scale and min per 32.
// ggml-quants.c's reference dequantizer (weights only: no KV cache stores this type).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

#include "base/fp_contract_off.h"  // ggml's two roundings for d*q - m

namespace kvaudit::ggml {

// block_q4_K {f16 d, dmin; u8 scales[12]; u8 qs[128]}: each 64 elements use 32 bytes of qs, low
// nibbles with pair 2c, high nibbles with pair 2c+1; y = (d*sc)*q - (dmin*m).
void Q4_KDequantize(const uint8_t* b, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, b += sizeof(BlockQ4_K)) {
    const float d = LoadF16(b);
    const float dmin = LoadF16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* q = b + 16;
    for (int c = 0; c < kQK_K / 64; ++c, q += 32) {
      int sc, m;
      ScaleMinK4(2 * c, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      ScaleMinK4(2 * c + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

}  // namespace kvaudit::ggml
