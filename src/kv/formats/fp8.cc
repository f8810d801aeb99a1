// fp8 row codecs (OCP e4m3 / e5m2; static and per-block dynamic scales). The scalar parts are
// compiled once; the decoders once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/fp8.h"

#include "kv/formats/codec_kernels.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/half.h"
#include "base/isa.h"

namespace kvaudit {
namespace {

// Bit-level parameters of the two OCP formats (OFP8 spec v1.0, Table 1).
struct Fp8Spec {
  int mant_bits;  // M
  int bias;
  uint32_t max_code;  // magnitude bits of the largest finite value
  float max;
};
constexpr Fp8Spec SpecOf(Fp8Kind k) {
  return k == Fp8Kind::kE4M3 ? Fp8Spec{3, 7, 0x7E, 448.0f} : Fp8Spec{2, 15, 0x7B, 57344.0f};
}

// Round v (0 <= v < 2^23) to the nearest integer, ties to even; exact, independent of the FP
// environment's rounding mode.
inline uint32_t RoundHalfEven(float v) {
  uint32_t m = static_cast<uint32_t>(v);
  const float rem = v - static_cast<float>(m);
  if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
  return m;
}

std::array<float, 256> MakeLut(Fp8Kind kind) {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = Fp8ToF32(static_cast<uint8_t>(c), kind);
  return t;
}
const std::array<float, 256>& Lut(Fp8Kind kind) {
  static const std::array<float, 256> e4m3 = MakeLut(Fp8Kind::kE4M3), e5m2 = MakeLut(Fp8Kind::kE5M2);
  return kind == Fp8Kind::kE4M3 ? e4m3 : e5m2;
}

}  // namespace

uint8_t Fp8FromF32(float x, Fp8Kind kind) {
  const Fp8Spec f = SpecOf(kind);
  const uint32_t u = FloatToBits(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;                                           // |x| as bits
  if (a > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7Fu);               // NaN -> S.1111111
  if (BitsToFloat(a) >= f.max) return static_cast<uint8_t>(sign | f.max_code);  // SATFINITE (inf too)
  const int emin = 1 - f.bias;                                                  // exponent of the smallest normal
  if (a < static_cast<uint32_t>(emin + 127) << 23) {
    // Subnormal range: value = m·2^(emin−M) with m = RNE(|x| / 2^(emin−M)) in [0, 2^M]. m = 2^M is
    // the smallest normal's code (fp8 bit patterns are contiguous in magnitude), so no special case.
    const float v = BitsToFloat(a) * std::ldexp(1.0f, f.mant_bits - emin);  // ×2^k: exact
    return static_cast<uint8_t>(sign | RoundHalfEven(v));
  }
  // Normal: rebias the f32 exponent (127 -> bias) and keep the top M of the 23 mantissa bits,
  // rounding the dropped bits to nearest even; a carry into the exponent is the next binade, which
  // is correct. |x| < max and max is representable, so the result cannot pass max_code.
  const int shift = 23 - f.mant_bits;
  const uint32_t r = a - (static_cast<uint32_t>(127 - f.bias) << 23);
  uint32_t code = r >> shift;
  const uint32_t rest = r & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (code & 1u))) ++code;
  return static_cast<uint8_t>(sign | code);
}

float Fp8ToF32(uint8_t code, Fp8Kind kind) {
  const Fp8Spec f = SpecOf(kind);
  const int mag = code & 0x7F;
  const int e = mag >> f.mant_bits, m = mag & ((1 << f.mant_bits) - 1);
  float v;
  if (kind == Fp8Kind::kE4M3 && mag == 0x7F) {
    v = std::numeric_limits<float>::quiet_NaN();  // e4m3fn: S.1111.111 is the only NaN, no inf
  } else if (kind == Fp8Kind::kE5M2 && e == 31) {
    v = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), 1 - f.bias - f.mant_bits);  // subnormal m·2^(1−bias−M)
  } else {
    v = std::ldexp(static_cast<float>((1 << f.mant_bits) + m), e - f.bias - f.mant_bits);
  }
  return (code & 0x80) ? -v : v;
}

float Fp8MaxFinite(Fp8Kind kind) { return SpecOf(kind).max; }

float Fp8CalibScale(float amax, Fp8Kind kind) {
  const float s = amax / SpecOf(kind).max;
  return s > 0.0f ? s : FLT_EPSILON;
}

namespace {

// ---- `unit` / `calib`: src [n] codes, value = fp8 · params.scale ----
template <Fp8Kind K>
struct Static {
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n); }
  static double Bits(int64_t, const CodecParams&) { return 8.0; }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams& p) {
    for (int64_t i = 0; i < n; ++i) dst[i] = Fp8FromF32(x[i] / p.scale, K);
  }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams& p) {
    const auto& lut = Lut(K);
    for (int64_t i = 0; i < n; ++i) y[i] = lut[src[i]] * p.scale;
  }
};

// ---- `dynamic`: src [n/32 blocks] of {f32 scale; uint8 codes[32]} ----
constexpr int kBlock = kFp8DynamicBlock;
constexpr int kBlockBytes = 4 + kBlock;
static_assert(kBlock == 32, "the AVX-512 decoder decodes a block as two 16-code halves");

inline float BlockScale(const uint8_t* blk) {
  float s;
  std::memcpy(&s, blk, 4);
  return s;
}

template <Fp8Kind K>
struct Dynamic {
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n / kBlock) * kBlockBytes; }
  static double Bits(int64_t, const CodecParams&) { return 8.0 * kBlockBytes / kBlock; }  // 9
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
    for (int64_t b = 0; b < n / kBlock; ++b) {
      const float* xb = x + b * kBlock;  // [32]
      uint8_t* blk = dst + b * kBlockBytes;
      float amax = 0.0f;
      for (int i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
      const float s = amax / SpecOf(K).max;
      std::memcpy(blk, &s, 4);
      // x / s, as vLLM applies its scale; the block maximum lands on ±max (or saturates onto it).
      for (int i = 0; i < kBlock; ++i) blk[4 + i] = s > 0.0f ? Fp8FromF32(xb[i] / s, K) : 0;
    }
  }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    const auto& lut = Lut(K);
    for (int64_t b = 0; b < n / kBlock; ++b) {
      const uint8_t* blk = src + b * kBlockBytes;
      const float s = BlockScale(blk);
      for (int i = 0; i < kBlock; ++i) y[b * kBlock + i] = lut[blk[4 + i]] * s;
    }
  }
};

template <class C, class Kernels>
RowCodec Make(std::string_view name, int block_elems) {
  return MakeRowCodec<Kernels>(name, block_elems, C::RowBytes, C::Bits, C::Quantize, C::Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/fp8.cc"
#include "base/isa_passes.h"  // the decoders below, once per kernel path

namespace kvaudit {

// Fn(): the active path's kernels at call time (ForceIsaForTesting switches what later callers
// get); FnRef(): the scalar twins.
#define KVAUDIT_FP8_CODEC(Fn, Impl, Kernels, name, block)                                   \
  const RowCodec& Fn() {                                                                    \
    static const RowCodec codec[3] = {Make<Impl, isa_portable::Kernels>(name, block),       \
                                      Make<Impl, isa_avx2::Kernels>(name, block),           \
                                      Make<Impl, isa_avx512::Kernels>(name, block)};        \
    return codec[static_cast<int>(ActiveIsa())];                                            \
  }                                                                                         \
  const RowCodec& Fn##Ref() {                                                               \
    static const RowCodec codec = Make<Impl, RowKernelsRef<Impl::Dequantize>>(name, block); \
    return codec;                                                                           \
  }
KVAUDIT_FP8_CODEC(Fp8E4M3Codec, Static<Fp8Kind::kE4M3>, StaticKernels<Fp8Kind::kE4M3>, "fp8_e4m3", 1)
KVAUDIT_FP8_CODEC(Fp8E5M2Codec, Static<Fp8Kind::kE5M2>, StaticKernels<Fp8Kind::kE5M2>, "fp8_e5m2", 1)
KVAUDIT_FP8_CODEC(Fp8E4M3DynamicCodec, Dynamic<Fp8Kind::kE4M3>, DynamicKernels<Fp8Kind::kE4M3>, "fp8_e4m3_dynamic",
                  kBlock)
KVAUDIT_FP8_CODEC(Fp8E5M2DynamicCodec, Dynamic<Fp8Kind::kE5M2>, DynamicKernels<Fp8Kind::kE5M2>, "fp8_e5m2_dynamic",
                  kBlock)
#undef KVAUDIT_FP8_CODEC

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// 16 codes -> 16 floats, exact. e5m2 is the upper byte of a binary16. For e4m3, (S<<15)|(EEEEMMM<<7)
// is a binary16 with the same exponent field under bias 15 instead of 7, i.e. the value × 2^-8 for
// normals and subnormals alike; ×256 restores it. The NaN code S.1111.111 comes out as ±480, which
// no finite e4m3 reaches (max 448), and is mapped back to NaN.
template <Fp8Kind K>
inline __m512 Decode16(const uint8_t* src, __m512 scale) {
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  if constexpr (K == Fp8Kind::kE5M2) {
    return _mm512_mul_ps(_mm512_cvtph_ps(_mm256_slli_epi16(b, 8)), scale);
  } else {
    // ×256 is folded into the scale: (h·256)·s and h·(256·s) are the same single rounding, as
    // h·256 and 256·s are exact (powers of two, far from the f32 limits for e4m3 values).
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8),
                                      _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7));
    const __m512 v = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_mul_ps(scale, _mm512_set1_ps(256.0f)));
    const __mmask16 nan =
        _mm256_cmpeq_epi16_mask(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), _mm256_set1_epi16(0x7F));
    return _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  }
}
// kv/formats/codec_kernels.h decoder of `unit` / `calib`: fp8 · scale, rounded as Static::Dequantize rounds it.
template <Fp8Kind K>
struct StaticDecoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m512* v) {
    v[0] = Decode16<K>(row + 16 * u, _mm512_set1_ps(p.scale));
  }
};

// kv/formats/codec_kernels.h decoder of `dynamic`: one block, fp8 · block scale, rounded as
// Dynamic::Dequantize rounds it.
template <Fp8Kind K>
struct DynamicDecoder {
  static constexpr int kUnit = kBlock;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBlockBytes;
    const __m512 s = _mm512_set1_ps(BlockScale(blk));
    v[0] = Decode16<K>(blk + 4, s);
    v[1] = Decode16<K>(blk + 20, s);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// Decode16's arithmetic on 8 codes (vcvtph2ps on 8 binary16; the e4m3 NaN code blended back).
template <Fp8Kind K>
inline __m256 Decode8(const uint8_t* src, __m256 scale) {
  const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src)));
  if constexpr (K == Fp8Kind::kE5M2) {
    return _mm256_mul_ps(_mm256_cvtph_ps(_mm_slli_epi16(b, 8)), scale);
  } else {
    const __m128i magnitude = _mm_and_si128(b, _mm_set1_epi16(0x7F));
    const __m128i h =
        _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8), _mm_slli_epi16(magnitude, 7));
    const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_mul_ps(scale, _mm256_set1_ps(256.0f)));
    const __m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpeq_epi16(magnitude, _mm_set1_epi16(0x7F))));
    return _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
  }
}
// kv/formats/codec_kernels_avx2.inl.h decoders: StaticDecoder / DynamicDecoder above on 8 lanes.
template <Fp8Kind K>
struct StaticDecoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m256* v) {
    const __m256 s = _mm256_set1_ps(p.scale);
    v[0] = Decode8<K>(row + 16 * u, s);
    v[1] = Decode8<K>(row + 16 * u + 8, s);
  }
};
template <Fp8Kind K>
struct DynamicDecoder {
  static constexpr int kUnit = kBlock;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * kBlockBytes;
    const __m256 s = _mm256_set1_ps(BlockScale(blk));
    for (int k = 0; k < 4; ++k) v[k] = Decode8<K>(blk + 4 + 8 * k, s);
  }
};
#endif
template <Fp8Kind K>
using StaticKernels = KVAUDIT_ROW_KERNELS(StaticDecoder<K>, Static<K>::Dequantize);
template <Fp8Kind K>
using DynamicKernels = KVAUDIT_ROW_KERNELS(DynamicDecoder<K>, Dynamic<K>::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
