#include "kv/formats/float_row_kernels.h"  // first: includes ops/simd.h (GCC bug 105593)

#include "kv/formats/f16.h"

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

#if defined(__AVX512F__)
// 16 halves at element i -> 16 floats (VCVTPH2PS is exact, subnormals included).
inline __m512 Load16(const uint8_t* src, int64_t i) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
}
#endif
constexpr DequantizeFn Dequantize = FloatRowDequantize<Load>;
using Kernels = KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load, Dequantize);

}  // namespace

const RowCodec& F16Codec() {
  static const RowCodec codec = MakeRowCodec<Kernels>("f16", 1, RowBytes, BitsPerElement, Quantize, Dequantize);
  return codec;
}

const RowCodec& F16CodecRef() {
  static const RowCodec codec =
      MakeRowCodec<FloatRowKernelsRef<Load>>("f16", 1, RowBytes, BitsPerElement, Quantize, Dequantize);
  return codec;
}

const ggml::GgmlType& F16Ggml() {
  static const ggml::GgmlType type{[](const float* x, uint8_t* dst, int64_t n) { Quantize(x, dst, n, CodecParams{}); },
                                   nullptr, ggml::VecDotKind::kFloat};
  return type;
}

}  // namespace kvaudit
