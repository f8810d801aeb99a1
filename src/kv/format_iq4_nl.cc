// IQ4_NL: block = fp16 d, 16 bytes of nibbles; value = kvalues_iq4nl[code] * d.
#include "ops/simd.h"  // first: wraps <immintrin.h>

#include "kv/format_iq4_nl.h"

#include <cmath>

#include "kv/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 18;  // sizeof(block_iq4_nl)
static_assert(kBytes == sizeof(ggml::BlockIq4Nl));

constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

// best_index_int8 (ggml-quants.c): nearest table entry by a branch-free binary search on 2x;
// an exact midpoint goes to the upper entry.
int BestIndexInt8(float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int step = 8; step > 0; step >>= 1) {
    const int j = idx + step;
    idx = (x2 >= static_cast<float>(ggml::kIq4NlValues[j - 1] + ggml::kIq4NlValues[j])) ? j : idx;
  }
  return idx;
}
}  // namespace

namespace detail {

// quantize_row_iq4_nl_ref = quantize_row_iq4_nl_impl(32, 32, ..., quant_weights = NULL, ntry = -1),
// what ggml-cpu's from_float (quantize_row_iq4_nl) calls for KV writes: weights w = x², initial
// scale d0 = max/-127 (max = signed value of largest |x|, first wins), codes = nearest table entry
// of x/d0, then the weighted least-squares refit d = Σwqx/Σwq² is stored. With ntry <= 0 there is
// no scale search and the codes are NOT recomputed with the refit d.
// All-|x| < 1e-15 blocks: d = 0 and codes 0. (Upstream before the `memset(Lb, 0, ...)` fix left
// the codes of such a block stale from the caller's L buffer; the values are 0 either way.)
void Iq4NlQuantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    uint8_t codes[ggml::kQK] = {};  // [32] L
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    float d = 0.0f;
    if (!(amax < kGroupMaxEps)) {
      const float d0 = max / static_cast<float>(ggml::kIq4NlValues[0]);
      const float id = 1 / d0;
      float sumqx = 0.0f, sumq2 = 0.0f;
      for (int j = 0; j < ggml::kQK; ++j) {
        const int l = BestIndexInt8(id * x[j]);
        codes[j] = static_cast<uint8_t>(l);
        const float q = ggml::kIq4NlValues[l];
        const float w = x[j] * x[j];
        // sumqx += w*q*x[j]; sumq2 += w*q*q: left-to-right products, no FMA (ggml-base).
        sumqx = ggml::Rounded(ggml::Rounded(w * q) * x[j]) + sumqx;
        sumq2 = ggml::Rounded(ggml::Rounded(w * q) * q) + sumq2;
      }
      d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    }
    ggml::StoreF16(dst, d);
    for (int j = 0; j < 16; ++j) dst[2 + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
  }
}

// dequantize_row_iq4_nl.
void Iq4NlDequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(ggml::kIq4NlValues[src[2 + j] & 0x0f]);
      y[j + 16] = d * static_cast<float>(ggml::kIq4NlValues[src[2 + j] >> 4]);
    }
  }
}

float Iq4NlDotScalar(const uint8_t* src, const float* q, int64_t n) {
  float v[ggml::kQK];  // [32] one dequantized block
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Iq4NlDequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) sum += v[j] * q[i + j];
  }
  return sum;
}

void Iq4NlAxpyScalar(const uint8_t* src, float w, float* acc, int64_t n) {
  float v[ggml::kQK];  // [32]
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Iq4NlDequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) acc[i + j] += w * v[j];
  }
}

#if defined(__AVX512F__)
// The block layout and value rule (d · table[code]) are shared with q4_0: ggml_blocks.h.
float Iq4NlDotSimd(const uint8_t* src, const float* q, int64_t n) {
  return ggml::NibbleLutDot(src, q, n, _mm512_setr_ps(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}
void Iq4NlAxpySimd(const uint8_t* src, float w, float* acc, int64_t n) {
  ggml::NibbleLutAxpy(src, w, acc, n, _mm512_setr_ps(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}
#else
float Iq4NlDotSimd(const uint8_t* src, const float* q, int64_t n) { return Iq4NlDotScalar(src, q, n); }
void Iq4NlAxpySimd(const uint8_t* src, float w, float* acc, int64_t n) { Iq4NlAxpyScalar(src, w, acc, n); }
#endif

}  // namespace detail

const RowCodec& Iq4NlCodec() {
  static const RowCodec codec = {
      "iq4_nl",
      ggml::kQK,
      [](int64_t n, const CodecParams&) -> uint64_t { return static_cast<uint64_t>(n / ggml::kQK) * kBytes; },
      [](int64_t, const CodecParams&) { return kBytes * 8.0 / ggml::kQK; },
      [](const float* x, uint8_t* dst, int64_t n, const CodecParams&) { detail::Iq4NlQuantize(x, dst, n); },
      [](const uint8_t* src, float* y, int64_t n, const CodecParams&) { detail::Iq4NlDequantize(src, y, n); },
      [](const uint8_t* src, const float* q, int64_t n, const CodecParams&) { return detail::Iq4NlDotSimd(src, q, n); },
      [](const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
        detail::Iq4NlAxpySimd(src, w, acc, n);
      },
  };
  return codec;
}

}  // namespace kvaudit
