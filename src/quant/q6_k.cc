// Q6_K: super-blocks of 256 elements, 6-bit codes with an 8-bit scale per 16.
// ggml-quants.c's reference dequantizer (weights only: no KV cache stores this type).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {

// block_q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: two halves of 128 elements; in each,
// four quarters of 32 take low/high nibbles of ql and 2-bit fields of qh; one scale per 16.
void Q6_KDequantize(const uint8_t* b, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, b += sizeof(BlockQ6_K)) {
    const float d = LoadF16(b + 208);
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace kvaudit::ggml
