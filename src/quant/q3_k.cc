// Q3_K: super-blocks of 256 elements, 3-bit codes with a 6-bit scale per 16.
// ggml-quants.c's reference dequantizer (weights only: no KV cache stores this type).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {

// block_q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: 2 low bits as q2_K's (element
// 32j + l of half h is bits 2j.. of qs[32h + l]), the third bit is bit 4h + j of hmask[l], and a
// clear bit subtracts 4; one scale per 16 elements; y = (d*sc) * (q - 4*!hbit).
void Q3_KDequantize(const uint8_t* b, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, b += sizeof(BlockQ3_K)) {
    const uint8_t* hm = b;
    const uint8_t* q = b + 32;
    const uint8_t* scales = b + 96;
    const float d = LoadF16(b + 108);
    int k = 0;
    uint8_t m = 1;
    for (int n = 0; n < kQK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d * static_cast<float>(ScaleK3(k++, scales));
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            *y++ = dl * static_cast<float>(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
          }
        }
      }
    }
  }
}

}  // namespace kvaudit::ggml
