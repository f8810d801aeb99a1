// f32 row codec. The scalar parts are compiled once; the kernel section below once per kernel
// path (base/isa_passes.h), and F32Codec() hands out the active path's kernels.
#ifndef KVAUDIT_ISA_PASS
#include "kv/formats/float_row_kernels.h"  // first: includes base/simd.h (GCC bug 105593)

#include "kv/formats/f32.h"

#include <cstring>

#include "base/isa.h"

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

template <class Kernels>
RowCodec Make() {
  return MakeRowCodec<Kernels>("f32", 1, RowBytes, BitsPerElement, Quantize, Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/f32.cc"
#include "base/isa_passes.h"  // the kernel section below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& F32Codec() {
  static const RowCodec codec[3] = {Make<isa_portable::Kernels>(), Make<isa_avx2::Kernels>(),
                                    Make<isa_avx512::Kernels>()};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& F32CodecRef() {
  static const RowCodec codec = Make<FloatRowKernelsRef<Load>>();
  return codec;
}

const ggml::GgmlType& F32Ggml() {
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
inline __m512 Load16(const uint8_t* src, int64_t i) {  // loadu: no alignment needed
  return _mm512_loadu_ps(reinterpret_cast<const float*>(src) + i);
}
#elif defined(KVAUDIT_ISA_AVX2)
inline __m256 Load8(const uint8_t* src, int64_t i) { return _mm256_loadu_ps(reinterpret_cast<const float*>(src) + i); }
#endif
using Kernels = KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load8, Load, Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
