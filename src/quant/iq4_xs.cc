// IQ4_XS: super-blocks of 256 elements, iq4_nl's grid with a 6-bit scale per 32.
// ggml-quants.c's reference dequantizer (weights only: no KV cache stores this type).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {

// block_iq4_xs {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: eight 32-element sub-blocks, each
// with a 6-bit scale biased by 32 (low 4 bits: nibble k%2 of scales_l[k/2]; top 2 bits: bits 2k.. of
// scales_h) and iq4_nl's nibble layout in its 16 bytes of qs; y = (d*(ls-32)) * kvalues_iq4nl[q].
void Iq4XsDequantize(const uint8_t* b, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, b += sizeof(BlockIq4Xs)) {
    const float d = LoadF16(b);
    const uint16_t scales_h = LoadU16(b + 2);
    const uint8_t* scales_l = b + 4;
    const uint8_t* qs = b + 8;
    for (int k = 0; k < kQK_K / 32; ++k, qs += 16, y += 32) {
      const int ls = ((scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) | (((scales_h >> (2 * k)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4NlValues[qs[j] & 0x0F]);
        y[j + 16] = dl * static_cast<float>(kIq4NlValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace kvaudit::ggml
