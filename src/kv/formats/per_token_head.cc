// vLLM per-token-head row codecs (kv/formats/per_token_head.h). The scalar parts are compiled once;
// the decoders once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/per_token_head.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "base/isa.h"
#include "kv/formats/codec_kernels.h"
#include "kv/formats/fp8.h"

namespace kvaudit {
namespace {

enum class CodeType { kInt8, kFp8 };

// The fp8 codes' values (exact), for the decoders' gathers and the scalar dequantizer alike.
const std::array<float, 256>& E4M3Lut() {
  static const std::array<float, 256> lut = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = Fp8ToF32(static_cast<uint8_t>(c), Fp8Kind::kE4M3);
    return t;
  }();
  return lut;
}

constexpr int kScaleBytes = 4;  // the row's f32 scale, before its codes

inline float RowScale(const uint8_t* row) {
  float s;
  std::memcpy(&s, row, kScaleBytes);
  return s;
}

template <CodeType T>
struct PerTokenHead {
  static constexpr float kQMax = T == CodeType::kInt8 ? 127.0f : 448.0f;
  static constexpr float kQMin = T == CodeType::kInt8 ? -128.0f : -448.0f;

  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n + kScaleBytes); }
  static double Bits(int64_t n, const CodecParams&) { return 8.0 * static_cast<double>(n + kScaleBytes) / n; }
  static uint8_t Code(float v) {
    if (std::isnan(v)) v = kQMin;
    if constexpr (T == CodeType::kInt8) {
      v = v >= 0.0f ? v + 0.5f : v - 0.5f;
      v = std::clamp(v, kQMin, kQMax);
      return static_cast<uint8_t>(static_cast<int8_t>(v));  // the store truncates toward zero
    } else {
      return Fp8FromF32(std::clamp(v, kQMin, kQMax), Fp8Kind::kE4M3);
    }
  }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));  // NaN left out
    const float scale = std::max(amax / kQMax, kPerTokenHeadMinScale);
    const float inv = 1.0f / scale;
    std::memcpy(dst, &scale, kScaleBytes);
    for (int64_t i = 0; i < n; ++i) dst[kScaleBytes + i] = Code(x[i] * inv);
  }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    const float s = RowScale(src);
    const uint8_t* codes = src + kScaleBytes;  // [n]
    for (int64_t i = 0; i < n; ++i) {
      const float c = T == CodeType::kInt8 ? static_cast<float>(static_cast<int8_t>(codes[i])) : E4M3Lut()[codes[i]];
      y[i] = c * s;
    }
  }
};

template <CodeType T, class Kernels>
RowCodec Make() {
  using C = PerTokenHead<T>;
  return MakeRowCodec<Kernels>(T == CodeType::kInt8 ? "int8_per_token_head" : "fp8_per_token_head", 1, C::RowBytes,
                               C::Bits, C::Quantize, C::Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/per_token_head.cc"
#include "base/isa_passes.h"  // the decoders below, once per kernel path

namespace kvaudit {

namespace {
template <CodeType T>
const RowCodec& Codec() {
  static const RowCodec codec[3] = {Make<T, isa_portable::Kernels<T>>(), Make<T, isa_avx2::Kernels<T>>(),
                                    Make<T, isa_avx512::Kernels<T>>()};
  return codec[static_cast<int>(ActiveIsa())];
}
template <CodeType T>
const RowCodec& CodecRef() {
  static const RowCodec codec = Make<T, RowKernelsRef<PerTokenHead<T>::Dequantize>>();
  return codec;
}
}  // namespace

const RowCodec& Int8PerTokenHeadCodec() { return Codec<CodeType::kInt8>(); }
const RowCodec& Int8PerTokenHeadCodecRef() { return CodecRef<CodeType::kInt8>(); }
const RowCodec& Fp8PerTokenHeadCodec() { return Codec<CodeType::kFp8>(); }
const RowCodec& Fp8PerTokenHeadCodecRef() { return CodecRef<CodeType::kFp8>(); }

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: 16 codes · the row scale, as PerTokenHead::Dequantize.
template <CodeType T>
struct Decoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const __m512i c =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kScaleBytes + 16 * u)));
    __m512 vals;
    if constexpr (T == CodeType::kInt8) {
      vals = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(c, 24), 24));  // sign-extend
    } else {
      vals = _mm512_i32gather_ps(c, E4M3Lut().data(), 4);
    }
    v[0] = _mm512_mul_ps(vals, _mm512_set1_ps(RowScale(row)));
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same on 8 lanes.
template <CodeType T>
struct Decoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kScaleBytes + 16 * u));
    const __m256 s = _mm256_set1_ps(RowScale(row));
    for (int h = 0; h < 2; ++h) {
      const __m128i bh = h == 0 ? b : _mm_unpackhi_epi64(b, b);
      __m256 vals;
      if constexpr (T == CodeType::kInt8) {
        vals = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bh));
      } else {
        vals = _mm256_i32gather_ps(E4M3Lut().data(), _mm256_cvtepu8_epi32(bh), 4);
      }
      v[h] = _mm256_mul_ps(vals, s);
    }
  }
};
#endif
template <CodeType T>
using Kernels = KVAUDIT_ROW_KERNELS(Decoder<T>, PerTokenHead<T>::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
