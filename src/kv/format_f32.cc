#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "kv/format_f32.h"

#include <cstring>

namespace kvaudit {
namespace {

// Row layout: x [n] as little-endian f32, 4·n bytes.
uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n) * 4; }
double BitsPerElement(int64_t, const CodecParams&) { return 32.0; }

inline float Load(const uint8_t* src, int64_t i) {
  float v;
  std::memcpy(&v, src + 4 * i, 4);  // rows need not be 4-byte aligned
  return v;
}

void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) { std::memcpy(dst, x, n * 4); }
void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) { std::memcpy(y, src, n * 4); }

// Scalar references: dot accumulates in double so it is the more accurate side of the comparison.
float DotRef(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(Load(src, i)) * q[i];
  return static_cast<float>(acc);
}

void AxpyRef(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) acc[i] += w * Load(src, i);
}

#if defined(__AVX512F__)
float DotSimd(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
  const float* x = reinterpret_cast<const float*>(src);  // loadu: no alignment needed
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(q + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(q + i + 16), a1);
  }
  if (i + 16 <= n) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(q + i), a0);
    i += 16;
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  for (; i < n; ++i) s += Load(src, i) * q[i];
  return s;
}

void AxpySimd(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
  const float* x = reinterpret_cast<const float*>(src);
  const __m512 vw = _mm512_set1_ps(w);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(vw, _mm512_loadu_ps(x + i), _mm512_loadu_ps(acc + i)));
  }
  for (; i < n; ++i) acc[i] += w * Load(src, i);
}
#else
constexpr auto DotSimd = DotRef;
constexpr auto AxpySimd = AxpyRef;
#endif

}  // namespace

const RowCodec& F32Codec() {
  static const RowCodec codec{"f32", 1, RowBytes, BitsPerElement, Quantize, Dequantize, DotSimd, AxpySimd};
  return codec;
}

const RowCodec& F32CodecRef() {
  static const RowCodec codec{"f32", 1, RowBytes, BitsPerElement, Quantize, Dequantize, DotRef, AxpyRef};
  return codec;
}

}  // namespace kvaudit
