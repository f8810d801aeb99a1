// Q8_0: block = fp16 d, 32 int8 codes; value = code * d.
#include "ops/simd.h"  // first: wraps <immintrin.h>

#include "kv/format_q8_0.h"

#include <cmath>

#include "kv/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 34;  // sizeof(block_q8_0)
static_assert(kBytes == sizeof(ggml::BlockQ8_0));
}  // namespace

namespace detail {

// quantize_row_q8_0_ref: d = amax / 127, id = 1/d, code = roundf(x * id) (half away from zero).
// (The x86 ggml-cpu from_float differs: see kv/q8_activation.h QuantizeQ8_0RowX86.)
void Q8_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float amax = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX macro (NaN handling included)
    }
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    for (int j = 0; j < ggml::kQK; ++j) {
      // roundf result is within [-127, 127] for finite input; the int8 store is C's conversion.
      dst[2 + j] = static_cast<uint8_t>(ggml::TruncF32ToI8(std::round(x[j] * id)));
    }
  }
}

// dequantize_row_q8_0.
void Q8_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    for (int j = 0; j < ggml::kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

float Q8_0DotScalar(const uint8_t* src, const float* q, int64_t n) {
  float v[ggml::kQK];  // [32] one dequantized block
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q8_0Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) sum += v[j] * q[i + j];
  }
  return sum;
}

void Q8_0AxpyScalar(const uint8_t* src, float w, float* acc, int64_t n) {
  float v[ggml::kQK];  // [32]
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q8_0Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) acc[i + j] += w * v[j];
  }
}

#if defined(__AVX512F__)
namespace {
inline __m512 Codes16(const uint8_t* p) {  // 16 int8 -> 16 f32
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
}  // namespace

// dot: Σ_j c_j·q_j in f32 lanes, then acc += d · that (d factored out of the block).
float Q8_0DotSimd(const uint8_t* src, const float* q, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    __m512 t = _mm512_mul_ps(Codes16(src + 2), _mm512_loadu_ps(q + i));
    t = _mm512_fmadd_ps(Codes16(src + 18), _mm512_loadu_ps(q + i + 16), t);
    acc = _mm512_fmadd_ps(t, ggml::BroadcastF16(src), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// acc += w · (c·d): dequantized exactly as dequantize_row_q8_0, then one FMA (ggml_vec_mad_f32).
void Q8_0AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) {
  const __m512 vw = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const __m512 d = ggml::BroadcastF16(src);
    const __m512 lo = _mm512_mul_ps(Codes16(src + 2), d);
    const __m512 hi = _mm512_mul_ps(Codes16(src + 18), d);
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(lo, vw, _mm512_loadu_ps(acc + i)));
    _mm512_storeu_ps(acc + i + 16, _mm512_fmadd_ps(hi, vw, _mm512_loadu_ps(acc + i + 16)));
  }
}
#else
float Q8_0DotSimd(const uint8_t* src, const float* q, int64_t n) { return Q8_0DotScalar(src, q, n); }
void Q8_0AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) { Q8_0AxpyScalar(src, w, acc, n); }
#endif

}  // namespace detail

const RowCodec& Q8_0Codec() {
  static const RowCodec codec = {
      "q8_0",
      ggml::kQK,
      [](int64_t n, const CodecParams&) -> uint64_t { return static_cast<uint64_t>(n / ggml::kQK) * kBytes; },
      [](int64_t, const CodecParams&) { return kBytes * 8.0 / ggml::kQK; },
      [](const float* x, uint8_t* dst, int64_t n, const CodecParams&) { detail::Q8_0Quantize(x, dst, n); },
      [](const uint8_t* src, float* y, int64_t n, const CodecParams&) { detail::Q8_0Dequantize(src, y, n); },
      [](const uint8_t* src, const float* q, int64_t n, const CodecParams&) { return detail::Q8_0DotSimd(src, q, n); },
      [](const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
        detail::Q8_0AxpySimd(src, w, acc, n);
      },
  };
  return codec;
}

}  // namespace kvaudit
