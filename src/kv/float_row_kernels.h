// Dequantize, dot and axpy kernels shared by the float row codecs (f32, f16, bf16). The three
// differ only in how stored values become floats (Load: one value; Load16: 16 values into a zmm,
// exact in every case), so the loops live here once and each format file supplies its loads.
// The scalar references accumulate the dot in double (the more accurate side of the SIMD-vs-scalar
// tests); the SIMD kernels are what attention runs, in prefill and decode alike.
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include <cstdint>

#include "kv/row_codec.h"

namespace kvaudit {

using FloatLoad = float (*)(const uint8_t* src, int64_t i);

template <FloatLoad Load>
void FloatRowDequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) y[i] = Load(src, i);
}

template <FloatLoad Load>
float FloatRowDotRef(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(Load(src, i)) * q[i];
  return static_cast<float>(acc);
}

template <FloatLoad Load>
void FloatRowAxpyRef(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) acc[i] += w * Load(src, i);
}

#if defined(__AVX512F__)
using FloatLoad16 = __m512 (*)(const uint8_t* src, int64_t i);

template <FloatLoad Load, FloatLoad16 Load16>
float FloatRowDotSimd(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_fmadd_ps(Load16(src, i), _mm512_loadu_ps(q + i), a0);
    a1 = _mm512_fmadd_ps(Load16(src, i + 16), _mm512_loadu_ps(q + i + 16), a1);
  }
  if (i + 16 <= n) {
    a0 = _mm512_fmadd_ps(Load16(src, i), _mm512_loadu_ps(q + i), a0);
    i += 16;
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  for (; i < n; ++i) s += Load(src, i) * q[i];
  return s;
}

template <FloatLoad Load, FloatLoad16 Load16>
void FloatRowAxpySimd(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
  const __m512 vw = _mm512_set1_ps(w);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(vw, Load16(src, i), _mm512_loadu_ps(acc + i)));
  }
  for (; i < n; ++i) acc[i] += w * Load(src, i);
}
#endif

}  // namespace kvaudit
