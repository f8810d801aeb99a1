// f16 row codec. The scalar parts are compiled once; the kernel section below once per kernel
// path (base/isa_passes.h), and F16Codec() hands out the active path's kernels.
#ifndef KVAUDIT_ISA_PASS
#include "kv/formats/float_row_kernels.h"  // first: includes base/simd.h (GCC bug 105593)

#include "kv/formats/f16.h"

#include <cstring>

#include "base/half.h"
#include "base/isa.h"

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

constexpr DequantizeFn Dequantize = FloatRowDequantize<Load>;

template <class Kernels>
RowCodec Make() {
  return MakeRowCodec<Kernels>("f16", 1, RowBytes, BitsPerElement, Quantize, Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/f16.cc"
#include "base/isa_passes.h"  // the kernel section below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& F16Codec() {
  static const RowCodec codec[3] = {Make<isa_portable::Kernels>(), Make<isa_avx2::Kernels>(),
                                    Make<isa_avx512::Kernels>()};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& F16CodecRef() {
  static const RowCodec codec = Make<FloatRowKernelsRef<Load>>();
  return codec;
}

const ggml::GgmlType& F16Ggml() {
  static const ggml::GgmlType type{[](const float* x, uint8_t* dst, int64_t n) { Quantize(x, dst, n, CodecParams{}); },
                                   nullptr, ggml::VecDotKind::kFloat};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"
#include "kv/formats/float_row_kernels_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// 16 halves at element i -> 16 floats (VCVTPH2PS is exact, subnormals included).
inline __m512 Load16(const uint8_t* src, int64_t i) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
}
#elif defined(KVAUDIT_ISA_AVX2)
// 8 halves at element i -> 8 floats (F16C, exact as above).
inline __m256 Load8(const uint8_t* src, int64_t i) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
}
#endif
using Kernels = KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load8, Load, Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
