// IQ4_NL: block = fp16 d, 16 bytes of nibbles; value = kvalues_iq4nl[code] * d.
// ggml-quants.c's reference quantizer and dequantizer, and the expanded codes llama.cpp's integer
// dot reads (quant/block_formats.h).
#include "quant/block_formats.h"

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {
constexpr int kBytes = sizeof(BlockIq4Nl);
constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

// best_index_int8 (ggml-quants.c): nearest table entry by a branch-free binary search on 2x;
// an exact midpoint goes to the upper entry.
int BestIndexInt8(float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int step = 8; step > 0; step >>= 1) {
    const int j = idx + step;
    idx = (x2 >= static_cast<float>(kIq4NlValues[j - 1] + kIq4NlValues[j])) ? j : idx;
  }
  return idx;
}
}  // namespace

// quantize_row_iq4_nl_ref = quantize_row_iq4_nl_impl(32, 32, ..., quant_weights = NULL, ntry = -1),
// what ggml-cpu's from_float (quantize_row_iq4_nl) calls for KV writes: weights w = x², initial
// scale d0 = max/-127 (max = signed value of largest |x|, first wins), codes = nearest table entry
// of x/d0, then the weighted least-squares refit d = Σwqx/Σwq² is stored. With ntry <= 0 there is
// no scale search and the codes are NOT recomputed with the refit d.
// All-|x| < 1e-15 blocks: d = 0 and codes 0. (Upstream before the `memset(Lb, 0, ...)` fix left
// the codes of such a block stale from the caller's L buffer; the values are 0 either way.)
void Iq4NlQuantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, dst += kBytes) {
    uint8_t codes[kQK] = {};  // [32] L
    const auto [amax, max] = LargestMagnitude(x);
    float d = 0.0f;
    if (!(amax < kGroupMaxEps)) {
      const float d0 = max / static_cast<float>(kIq4NlValues[0]);
      const float id = 1 / d0;
      float sumqx = 0.0f, sumq2 = 0.0f;
      for (int j = 0; j < kQK; ++j) {
        const int l = BestIndexInt8(id * x[j]);
        codes[j] = static_cast<uint8_t>(l);
        const float q = kIq4NlValues[l];
        const float w = x[j] * x[j];
        // sumqx += w*q*x[j]; sumq2 += w*q*q: left-to-right products, no FMA (ggml-base).
        sumqx = Rounded(Rounded(w * q) * x[j]) + sumqx;
        sumq2 = Rounded(Rounded(w * q) * q) + sumq2;
      }
      d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    }
    StoreF16(dst, d);
    for (int j = 0; j < 16; ++j) dst[2 + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
  }
}

// dequantize_row_iq4_nl.
void Iq4NlDequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, src += kBytes, y += kQK) {
    const float d = LoadF16(src);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4NlValues[src[2 + j] & 0x0f]);
      y[j + 16] = d * static_cast<float>(kIq4NlValues[src[2 + j] >> 4]);
    }
  }
}

// {d, qs[16]}: codes index kvalues_iq4nl.
void Iq4NlToCodes(const uint8_t* row, int64_t n, BlockCodes out) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    out.d[b] = LoadF16(row + b * kBytes);
    NibbleCodes(row + b * kBytes + 2, kIq4NlValues, out.codes + b * kQK);
  }
}

}  // namespace kvaudit::ggml
