// Q4_1: block = fp16 d, fp16 m, 16 bytes of nibbles; value = code * d + m.
#include "ops/simd.h"  // first: wraps <immintrin.h>

#include "kv/format_q4_1.h"

#include <cfloat>

#include "kv/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 20;  // sizeof(block_q4_1)
static_assert(kBytes == sizeof(ggml::BlockQ4_1));
}  // namespace

namespace detail {

// quantize_row_q4_1_ref: d = (max - min) / 15, code = min(15, (int8_t)((x - min)/d + 0.5f)) with
// the unrounded f32 min and d; fp16(d), fp16(min) stored.
void Q4_1Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    ggml::StoreF16(dst + 2, min);
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = ggml::TruncF32ToI8(ggml::Rounded((x[j] - min) * id) + 0.5f);
      const int8_t c1 = ggml::TruncF32ToI8(ggml::Rounded((x[j + 16] - min) * id) + 0.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 15 ? c0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 15 ? c1 : 15);
      dst[4 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

// dequantize_row_q4_1: x*d + m, two roundings (ggml-base has no FMA).
void Q4_1Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    const float m = ggml::LoadF16(src + 2);
    for (int j = 0; j < 16; ++j) {
      y[j] = ggml::Rounded(static_cast<float>(src[4 + j] & 0x0f) * d) + m;
      y[j + 16] = ggml::Rounded(static_cast<float>(src[4 + j] >> 4) * d) + m;
    }
  }
}

float Q4_1DotScalar(const uint8_t* src, const float* q, int64_t n) {
  float v[ggml::kQK];  // [32] one dequantized block
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q4_1Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) sum += v[j] * q[i + j];
  }
  return sum;
}

void Q4_1AxpyScalar(const uint8_t* src, float w, float* acc, int64_t n) {
  float v[ggml::kQK];  // [32]
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q4_1Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) acc[i + j] += w * v[j];
  }
}

#if defined(__AVX512F__)
namespace {
inline __m512 Identity16() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
}  // namespace

// dot = d·Σ c_j q_j + m·Σ q_j per block (f32 lanes; d and m factored out).
float Q4_1DotSimd(const uint8_t* src, const float* q, int64_t n) {
  const __m512 lut = Identity16();  // vpermps on the low 4 bits = nibble -> float, no mask needed
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const __m512i bytes = ggml::LoadNibbleBytes(src + 4);
    const __m512 q0 = _mm512_loadu_ps(q + i), q1 = _mm512_loadu_ps(q + i + 16);
    __m512 t = _mm512_mul_ps(_mm512_permutexvar_ps(bytes, lut), q0);
    t = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), lut), q1, t);
    acc = _mm512_fmadd_ps(t, ggml::BroadcastF16(src), acc);
    acc = _mm512_fmadd_ps(_mm512_add_ps(q0, q1), ggml::BroadcastF16(src + 2), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// acc += w · (c·d + m), the value rounded as dequantize_row_q4_1 rounds it, then one FMA.
void Q4_1AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) {
  const __m512 lut = Identity16();
  const __m512 vw = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const __m512 d = ggml::BroadcastF16(src), m = ggml::BroadcastF16(src + 2);
    const __m512i bytes = ggml::LoadNibbleBytes(src + 4);
    const __m512 lo = _mm512_add_ps(_mm512_mul_ps(_mm512_permutexvar_ps(bytes, lut), d), m);
    const __m512 hi = _mm512_add_ps(_mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), lut), d), m);
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(lo, vw, _mm512_loadu_ps(acc + i)));
    _mm512_storeu_ps(acc + i + 16, _mm512_fmadd_ps(hi, vw, _mm512_loadu_ps(acc + i + 16)));
  }
}
#else
float Q4_1DotSimd(const uint8_t* src, const float* q, int64_t n) { return Q4_1DotScalar(src, q, n); }
void Q4_1AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) { Q4_1AxpyScalar(src, w, acc, n); }
#endif

}  // namespace detail

const RowCodec& Q4_1Codec() {
  static const RowCodec codec = {
      "q4_1",
      ggml::kQK,
      [](int64_t n, const CodecParams&) -> uint64_t { return static_cast<uint64_t>(n / ggml::kQK) * kBytes; },
      [](int64_t, const CodecParams&) { return kBytes * 8.0 / ggml::kQK; },
      [](const float* x, uint8_t* dst, int64_t n, const CodecParams&) { detail::Q4_1Quantize(x, dst, n); },
      [](const uint8_t* src, float* y, int64_t n, const CodecParams&) { detail::Q4_1Dequantize(src, y, n); },
      [](const uint8_t* src, const float* q, int64_t n, const CodecParams&) { return detail::Q4_1DotSimd(src, q, n); },
      [](const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
        detail::Q4_1AxpySimd(src, w, acc, n);
      },
  };
  return codec;
}

}  // namespace kvaudit
