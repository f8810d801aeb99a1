#include "kv/formats/float_row_kernels.h"  // first: includes ops/simd.h (GCC bug 105593)

#include "kv/formats/f32.h"

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

#if defined(__AVX512F__)
inline __m512 Load16(const uint8_t* src, int64_t i) {  // loadu: no alignment needed
  return _mm512_loadu_ps(reinterpret_cast<const float*>(src) + i);
}
#endif
using Kernels = KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load, Dequantize);

}  // namespace

const RowCodec& F32Codec() {
  static const RowCodec codec = MakeRowCodec<Kernels>("f32", 1, RowBytes, BitsPerElement, Quantize, Dequantize);
  return codec;
}

const RowCodec& F32CodecRef() {
  static const RowCodec codec =
      MakeRowCodec<FloatRowKernelsRef<Load>>("f32", 1, RowBytes, BitsPerElement, Quantize, Dequantize);
  return codec;
}

const ggml::GgmlType& F32Ggml() {
  static const ggml::GgmlType type{[](const float* x, uint8_t* dst, int64_t n) { Quantize(x, dst, n, CodecParams{}); },
                                   nullptr, ggml::VecDotKind::kFloat};
  return type;
}

}  // namespace kvaudit
