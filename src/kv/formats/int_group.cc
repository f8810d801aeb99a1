#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/int_group.h"

#include <bit>
#include <cassert>
#include <cstring>

#include "base/half.h"
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
  static double Bits(int64_t, const CodecParams& p) { return 8.0 * static_cast<double>(GroupBytes(p.group, B)) / p.group; }

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
#if defined(__AVX512F__)
  // kv/formats/codec_kernels.h decoder: 32 elements inside one group (group % 32 == 0), each
  // fma(code, scale, min) as AsymDequantizeGroup computes it.
  struct Decoder {
    static constexpr int kUnit = 32;
    static bool Supports(int64_t, const CodecParams& p) { return p.group % 32 == 0; }
    static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m512* v) {
      const int64_t e = 32 * u;
      const bool pow2 = (p.group & (p.group - 1)) == 0;  // the usual 32/64/128: shifts, not divides
      const int64_t g = pow2 ? e >> std::countr_zero(static_cast<unsigned>(p.group)) : e / p.group;
      const int64_t j = pow2 ? e & (p.group - 1) : e % p.group;
      const uint8_t* blk = row + g * GroupBytes(p.group, B);
      const uint8_t* codes = blk + kHeaderBytes + j * B / 8;
      // (scale, min): the two f16 of the header, converted together (vcvtph2ps, exact like F16ToF32).
      uint32_t header;
      std::memcpy(&header, blk, 4);
      const __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(header)));
      __m512i c0, c1;
      if constexpr (B == 8) {
        c0 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
        c1 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16)));
      } else {
        // 16 bytes; byte k holds element 2k (low nibble) and 2k+1 (high nibble): interleave back.
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
        const __m512i lo = _mm512_and_si512(b, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(b, 4);
        c0 = _mm512_permutex2var_epi32(lo, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), hi);
        c1 = _mm512_permutex2var_epi32(lo, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), hi);
      }
      const __m512 vs = _mm512_broadcastss_ps(sm), vm = _mm512_broadcastss_ps(_mm_movehdup_ps(sm));
      v[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c0), vs, vm);
      v[1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c1), vs, vm);
    }
  };
#endif
};

template <int B>
RowCodec Make(std::string_view name, bool simd) {
  using C = IntGroup<B>;
#if defined(__AVX512F__)
  if (simd) {
    return MakeRowCodec<RowKernels<typename C::Decoder, C::Dequantize>>(name, 0, C::RowBytes, C::Bits, C::Quantize,
                                                                        C::Dequantize);
  }
#else
  (void)simd;
#endif
  return MakeRowCodec<RowKernelsRef<C::Dequantize>>(name, 0, C::RowBytes, C::Bits, C::Quantize, C::Dequantize);
}

}  // namespace

const RowCodec& Int8Codec() { static const RowCodec c = Make<8>("int8", true); return c; }
const RowCodec& Int4Codec() { static const RowCodec c = Make<4>("int4", true); return c; }
const RowCodec& Int8CodecRef() { static const RowCodec c = Make<8>("int8", false); return c; }
const RowCodec& Int4CodecRef() { static const RowCodec c = Make<4>("int4", false); return c; }

}  // namespace kvaudit
