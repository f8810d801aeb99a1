// int8 / int4 group-quantized row codecs (kv/formats/asym_group_quant.h). The scalar parts are
// compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/int_group.h"

#include <bit>
#include <cassert>
#include <cstring>

#include "base/half.h"
#include "base/isa.h"
#include "kv/formats/asym_group_quant.h"
#include "kv/formats/codec_kernels.h"

namespace kvaudit {
namespace {

constexpr int kHeaderBytes = 4;  // f16 scale, f16 min

inline int64_t GroupBytes(int group, int bits) { return kHeaderBytes + AsymCodeBytes(group, bits); }

inline void LoadHeader(const uint8_t* blk, float* scale, float* min) {
  uint16_t h[2];
  std::memcpy(h, blk, 4);
  *scale = F16ToF32(h[0]);
  *min = F16ToF32(h[1]);
}

template <int B>
struct IntGroup {
  static uint64_t RowBytes(int64_t n, const CodecParams& p) {
    return static_cast<uint64_t>(n / p.group * GroupBytes(p.group, B));
  }
  static double Bits(int64_t, const CodecParams& p) {
    return 8.0 * static_cast<double>(GroupBytes(p.group, B)) / p.group;
  }

  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams& p) {
    assert(IntGroupValid(n, p.group));
    const int64_t gb = GroupBytes(p.group, B);
    for (int64_t g = 0; g < n / p.group; ++g) {
      uint8_t* blk = dst + g * gb;  // [gb]
      float s, m;
      AsymQuantizeGroup(x + g * p.group, p.group, 1, B, blk + kHeaderBytes, &s, &m);
      const uint16_t h[2] = {F32ToF16(s), F32ToF16(m)};  // exact: s and m are f16 values already
      std::memcpy(blk, h, 4);
    }
  }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams& p) {
    const int64_t gb = GroupBytes(p.group, B);
    for (int64_t g = 0; g < n / p.group; ++g) {
      float s, m;
      LoadHeader(src + g * gb, &s, &m);
      AsymDequantizeGroup(src + g * gb + kHeaderBytes, p.group, B, s, m, y + g * p.group, 1);
    }
  }
};

template <int B, class Kernels>
RowCodec Make(std::string_view name) {
  using C = IntGroup<B>;
  return MakeRowCodec<Kernels>(name, 0, C::RowBytes, C::Bits, C::Quantize, C::Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/int_group.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// Int8Codec / Int4Codec: the active path's kernels at call time (ForceIsaForTesting switches what
// later callers get); the Ref ones: the scalar twins.
namespace {
template <int B>
const RowCodec& IntCodec(std::string_view name) {
  static const RowCodec codec[3] = {Make<B, isa_portable::Kernels<B>>(name), Make<B, isa_avx2::Kernels<B>>(name),
                                    Make<B, isa_avx512::Kernels<B>>(name)};
  return codec[static_cast<int>(ActiveIsa())];
}
template <int B>
const RowCodec& IntCodecRef(std::string_view name) {
  static const RowCodec codec = Make<B, RowKernelsRef<IntGroup<B>::Dequantize>>(name);
  return codec;
}
}  // namespace

const RowCodec& Int8Codec() { return IntCodec<8>("int8"); }
const RowCodec& Int4Codec() { return IntCodec<4>("int4"); }
const RowCodec& Int8CodecRef() { return IntCodecRef<8>("int8"); }
const RowCodec& Int4CodecRef() { return IntCodecRef<4>("int4"); }

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512) || defined(KVAUDIT_ISA_AVX2)
// Unit u of a row (32 elements inside one group: group % 32 == 0): its group's header and its
// first code byte.
struct UnitBytes {
  const uint8_t* header;
  const uint8_t* codes;
};
template <int B>
inline UnitBytes FindUnit(const uint8_t* row, int64_t u, const CodecParams& p) {
  const int64_t e = 32 * u;
  const bool pow2 = (p.group & (p.group - 1)) == 0;  // the usual 32/64/128: shifts, not divides
  const int64_t g = pow2 ? e >> std::countr_zero(static_cast<unsigned>(p.group)) : e / p.group;
  const int64_t j = pow2 ? e & (p.group - 1) : e % p.group;
  const uint8_t* blk = row + g * GroupBytes(p.group, B);
  return {blk, blk + kHeaderBytes + j * B / 8};
}
// (scale, min) in lanes 0 and 1: the two f16 of the header, converted together (vcvtph2ps, exact
// like F16ToF32).
inline __m128 HeaderScaleMin(const uint8_t* header) {
  uint32_t bits;
  std::memcpy(&bits, header, 4);
  return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(bits)));
}
#endif

#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: 32 elements inside one group (group % 32 == 0), each
// fma(code, scale, min) as AsymDequantizeGroup computes it.
template <int B>
struct Decoder {
  static constexpr int kUnit = 32;
  static bool Supports(int64_t, const CodecParams& p) { return p.group % 32 == 0; }
  static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m512* v) {
    const auto [header, codes] = FindUnit<B>(row, u, p);
    const __m128 sm = HeaderScaleMin(header);
    __m512i c0, c1;
    if constexpr (B == 8) {
      c0 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
      c1 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16)));
    } else {
      // 16 bytes; byte k holds element 2k (low nibble) and 2k+1 (high nibble): interleave back.
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
      const __m512i lo = _mm512_and_si512(b, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(b, 4);
      c0 = _mm512_permutex2var_epi32(lo, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), hi);
      c1 = _mm512_permutex2var_epi32(
          lo, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), hi);
    }
    const __m512 vs = _mm512_broadcastss_ps(sm), vm = _mm512_broadcastss_ps(_mm_movehdup_ps(sm));
    v[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c0), vs, vm);
    v[1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c1), vs, vm);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same fma(code, scale, min) on 8 lanes.
template <int B>
struct Decoder {
  static constexpr int kUnit = 32;
  static bool Supports(int64_t, const CodecParams& p) { return p.group % 32 == 0; }
  static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m256* v) {
    const auto [header, codes] = FindUnit<B>(row, u, p);
    const __m128 sm = HeaderScaleMin(header);
    __m128i c[2];  // codes 0-15, 16-31 as bytes
    if constexpr (B == 8) {
      c[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
      c[1] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16));
    } else {
      // 16 bytes; byte k holds element 2k (low nibble) and 2k+1 (high nibble): interleave back.
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
      const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15)),
                    hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
      c[0] = _mm_unpacklo_epi8(lo, hi);
      c[1] = _mm_unpackhi_epi8(lo, hi);
    }
    const __m256 vs = _mm256_broadcastss_ps(sm), vm = _mm256_broadcastss_ps(_mm_movehdup_ps(sm));
    for (int h = 0; h < 2; ++h) {
      v[2 * h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(c[h])), vs, vm);
      v[2 * h + 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(c[h], c[h]))), vs, vm);
    }
  }
};
#endif
template <int B>
using Kernels = KVAUDIT_ROW_KERNELS(Decoder<B>, IntGroup<B>::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
