// The row codecs of f32, f16 and bf16. The scalar parts are compiled once; the kernel section below
// once per kernel path (base/isa_passes.h), and each <Fmt>Codec() hands out the active path's.
#ifndef KVAUDIT_ISA_PASS
#include "kv/formats/float_row_kernels.h"  // first: includes base/simd.h (GCC bug 105593)

#include "kv/formats/float_codecs.h"

#include <cstring>
#include <string_view>

#include "base/half.h"
#include "base/isa.h"

namespace kvaudit {
namespace {

// Row layouts: n little-endian values of 4 (f32) or 2 (f16, bf16) bytes; rows need not be aligned.
inline float LoadF32(const uint8_t* src, int64_t i) {
  float v;
  std::memcpy(&v, src + 4 * i, 4);
  return v;
}
template <float (*kToF32)(uint16_t)>
inline float Load16Bit(const uint8_t* src, int64_t i) {
  uint16_t h;
  std::memcpy(&h, src + 2 * i, 2);
  return kToF32(h);
}
constexpr auto LoadF16 = Load16Bit<F16ToF32>;
constexpr auto LoadBF16 = Load16Bit<BF16ToF32>;

void QuantizeF32(const float* x, uint8_t* dst, int64_t n, const CodecParams&) { std::memcpy(dst, x, n * 4); }
void DequantizeF32(const uint8_t* src, float* y, int64_t n, const CodecParams&) { std::memcpy(y, src, n * 4); }
template <uint16_t (*kFromF32)(float)>
void Quantize16Bit(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = kFromF32(x[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

using QuantizeFn = void (*)(const float*, uint8_t*, int64_t, const CodecParams&);

template <int kBits, QuantizeFn kQuantize, DequantizeFn kDequantize>
struct FloatFormat {
  static constexpr DequantizeFn Dequantize = kDequantize;
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n) * (kBits / 8); }
  static double Bits(int64_t, const CodecParams&) { return kBits; }
  static void FromFloat(const float* x, uint8_t* dst, int64_t n) { kQuantize(x, dst, n, CodecParams{}); }
  template <class Kernels>
  static RowCodec Make(std::string_view name) {
    return MakeRowCodec<Kernels>(name, 1, RowBytes, Bits, kQuantize, kDequantize);
  }
};
using F32Format = FloatFormat<32, QuantizeF32, DequantizeF32>;
using F16Format = FloatFormat<16, Quantize16Bit<F32ToF16>, FloatRowDequantize<LoadF16>>;
using BF16Format = FloatFormat<16, Quantize16Bit<F32ToBF16>, FloatRowDequantize<LoadBF16>>;

}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/float_codecs.cc"
#include "base/isa_passes.h"  // the kernel section below, once per kernel path

namespace kvaudit {
namespace {

// The active path's codec at call time (ForceIsaForTesting switches what later callers get).
template <class Format, class OnPortable, class OnAvx2, class OnAvx512>
const RowCodec& ActiveCodec(std::string_view name) {
  static const RowCodec codec[3] = {Format::template Make<OnPortable>(name), Format::template Make<OnAvx2>(name),
                                    Format::template Make<OnAvx512>(name)};
  return codec[static_cast<int>(ActiveIsa())];
}

template <class Format, float (*kLoad)(const uint8_t*, int64_t)>
const RowCodec& RefCodec(std::string_view name) {
  static const RowCodec codec = Format::template Make<FloatRowKernelsRef<kLoad>>(name);
  return codec;
}

template <class Format>
const ggml::GgmlType& GgmlTraits() {
  static const ggml::GgmlType type{Format::FromFloat, nullptr, ggml::VecDotKind::kFloat};
  return type;
}

}  // namespace

const RowCodec& F32Codec() {
  return ActiveCodec<F32Format, isa_portable::F32Kernels, isa_avx2::F32Kernels, isa_avx512::F32Kernels>("f32");
}
const RowCodec& F16Codec() {
  return ActiveCodec<F16Format, isa_portable::F16Kernels, isa_avx2::F16Kernels, isa_avx512::F16Kernels>("f16");
}
const RowCodec& BF16Codec() {
  return ActiveCodec<BF16Format, isa_portable::BF16Kernels, isa_avx2::BF16Kernels, isa_avx512::BF16Kernels>("bf16");
}

const RowCodec& F32CodecRef() { return RefCodec<F32Format, LoadF32>("f32"); }
const RowCodec& F16CodecRef() { return RefCodec<F16Format, LoadF16>("f16"); }
const RowCodec& BF16CodecRef() { return RefCodec<BF16Format, LoadBF16>("bf16"); }

const ggml::GgmlType& F32Ggml() { return GgmlTraits<F32Format>(); }
const ggml::GgmlType& F16Ggml() { return GgmlTraits<F16Format>(); }
const ggml::GgmlType& BF16Ggml() { return GgmlTraits<BF16Format>(); }

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"
#include "kv/formats/float_row_kernels_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
inline __m512 LoadF32x16(const uint8_t* src, int64_t i) {  // loadu: no alignment needed
  return _mm512_loadu_ps(reinterpret_cast<const float*>(src) + i);
}
// 16 halves at element i -> 16 floats (VCVTPH2PS is exact, subnormals included).
inline __m512 LoadF16x16(const uint8_t* src, int64_t i) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
}
// 16 bf16 at element i -> 16 floats: widen to 32 bits and shift into the upper half (exact).
inline __m512 LoadBF16x16(const uint8_t* src, int64_t i) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
#elif defined(KVAUDIT_ISA_AVX2)
inline __m256 LoadF32x8(const uint8_t* src, int64_t i) {
  return _mm256_loadu_ps(reinterpret_cast<const float*>(src) + i);
}
inline __m256 LoadF16x8(const uint8_t* src, int64_t i) {  // F16C, exact as above
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
}
inline __m256 LoadBF16x8(const uint8_t* src, int64_t i) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
#endif
using F32Kernels = KVAUDIT_FLOAT_ROW_KERNELS(LoadF32x16, LoadF32x8, LoadF32, F32Format::Dequantize);
using F16Kernels = KVAUDIT_FLOAT_ROW_KERNELS(LoadF16x16, LoadF16x8, LoadF16, F16Format::Dequantize);
using BF16Kernels = KVAUDIT_FLOAT_ROW_KERNELS(LoadBF16x16, LoadBF16x8, LoadBF16, BF16Format::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
