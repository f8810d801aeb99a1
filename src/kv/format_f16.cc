#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "kv/format_f16.h"

#include <cstring>

#include "base/half.h"

namespace kvaudit {
namespace {

// Row layout: n little-endian binary16 values, 2·n bytes.
uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n) * 2; }
double BitsPerElement(int64_t, const CodecParams&) { return 16.0; }

inline float Load(const uint8_t* src, int64_t i) {
  uint16_t h;
  std::memcpy(&h, src + 2 * i, 2);
  return F16ToF32(h);
}

void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToF16(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) y[i] = Load(src, i);
}

float DotRef(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(Load(src, i)) * q[i];
  return static_cast<float>(acc);
}

void AxpyRef(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) acc[i] += w * Load(src, i);
}

#if defined(__AVX512F__)
// 16 halves at element i -> 16 floats (VCVTPH2PS is exact, subnormals included).
inline __m512 Load16(const uint8_t* src, int64_t i) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
}

float DotSimd(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
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

void AxpySimd(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
  const __m512 vw = _mm512_set1_ps(w);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(vw, Load16(src, i), _mm512_loadu_ps(acc + i)));
  }
  for (; i < n; ++i) acc[i] += w * Load(src, i);
}
#else
constexpr auto DotSimd = DotRef;
constexpr auto AxpySimd = AxpyRef;
#endif

}  // namespace

const RowCodec& F16Codec() {
  static const RowCodec codec{"f16", 1, RowBytes, BitsPerElement, Quantize, Dequantize, DotSimd, AxpySimd};
  return codec;
}

const RowCodec& F16CodecRef() {
  static const RowCodec codec{"f16", 1, RowBytes, BitsPerElement, Quantize, Dequantize, DotRef, AxpyRef};
  return codec;
}

}  // namespace kvaudit
