#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "kv/format_int_group.h"

#include <cassert>
#include <cstring>

#include "base/half.h"
#include "kv/asym_group_quant.h"

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
  static float DotRef(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    const int64_t gb = GroupBytes(p.group, B);
    double acc = 0;
    for (int64_t g = 0; g < n / p.group; ++g) {
      const uint8_t* blk = src + g * gb;
      float s, m;
      LoadHeader(blk, &s, &m);
      const float* qg = q + g * p.group;
      for (int j = 0; j < p.group; ++j) {
        acc += static_cast<double>(static_cast<float>(AsymCode(blk + kHeaderBytes, j, B)) * s + m) * qg[j];
      }
    }
    return static_cast<float>(acc);
  }
  static void AxpyRef(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    const int64_t gb = GroupBytes(p.group, B);
    for (int64_t g = 0; g < n / p.group; ++g) {
      const uint8_t* blk = src + g * gb;
      float s, m;
      LoadHeader(blk, &s, &m);
      float* ag = acc + g * p.group;
      for (int j = 0; j < p.group; ++j) ag[j] += w * (static_cast<float>(AsymCode(blk + kHeaderBytes, j, B)) * s + m);
    }
  }

#if defined(__AVX512F__)
  // Elements per SIMD step: 16 codes of int8 (16 bytes) or 32 codes of int4 (16 bytes).
  static constexpr int kStep = B == 8 ? 16 : 32;
  // Decode one step's codes to floats (v0: elements 0..15, v1: 16..31 for int4).
  static inline void Decode(const uint8_t* codes, __m512* v0, __m512* v1) {
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
    if constexpr (B == 8) {
      *v0 = _mm512_cvtepi32_ps(b);
      *v1 = *v0;
    } else {
      // Byte k holds element 2k (low nibble) and 2k+1 (high); interleave back to element order.
      const __m512i lo = _mm512_and_si512(b, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(b, 4);
      const __m512i idx0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i idx1 = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      *v0 = _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(lo, idx0, hi));
      *v1 = _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(lo, idx1, hi));
    }
  }
  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    const int64_t gb = GroupBytes(p.group, B);
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    float tail = 0.0f;
    for (int64_t g = 0; g < n / p.group; ++g) {
      const uint8_t* blk = src + g * gb;
      const uint8_t* codes = blk + kHeaderBytes;
      float s, m;
      LoadHeader(blk, &s, &m);
      const __m512 vs = _mm512_set1_ps(s), vm = _mm512_set1_ps(m);
      const float* qg = q + g * p.group;
      int j = 0;
      for (; j + kStep <= p.group; j += kStep) {
        __m512 v0, v1;
        Decode(codes + j * B / 8, &v0, &v1);
        a0 = _mm512_fmadd_ps(_mm512_fmadd_ps(v0, vs, vm), _mm512_loadu_ps(qg + j), a0);
        if constexpr (B == 4) a1 = _mm512_fmadd_ps(_mm512_fmadd_ps(v1, vs, vm), _mm512_loadu_ps(qg + j + 16), a1);
      }
      for (; j < p.group; ++j) tail += (static_cast<float>(AsymCode(codes, j, B)) * s + m) * qg[j];
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) + tail;
  }
  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    const int64_t gb = GroupBytes(p.group, B);
    for (int64_t g = 0; g < n / p.group; ++g) {
      const uint8_t* blk = src + g * gb;
      const uint8_t* codes = blk + kHeaderBytes;
      float s, m;
      LoadHeader(blk, &s, &m);
      // acc += w·(c·s + m) = c·(w·s) + (w·m) + acc
      const __m512 vs = _mm512_set1_ps(s), vm = _mm512_set1_ps(m), vw = _mm512_set1_ps(w);
      float* ag = acc + g * p.group;
      int j = 0;
      for (; j + kStep <= p.group; j += kStep) {
        __m512 v0, v1;
        Decode(codes + j * B / 8, &v0, &v1);
        _mm512_storeu_ps(ag + j, _mm512_fmadd_ps(vw, _mm512_fmadd_ps(v0, vs, vm), _mm512_loadu_ps(ag + j)));
        if constexpr (B == 4) {
          _mm512_storeu_ps(ag + j + 16,
                           _mm512_fmadd_ps(vw, _mm512_fmadd_ps(v1, vs, vm), _mm512_loadu_ps(ag + j + 16)));
        }
      }
      for (; j < p.group; ++j) ag[j] += w * (static_cast<float>(AsymCode(codes, j, B)) * s + m);
    }
  }
#else
  static constexpr auto Dot = DotRef;
  static constexpr auto Axpy = AxpyRef;
#endif
};

template <int B>
RowCodec Make(std::string_view name, bool simd) {
  using C = IntGroup<B>;
  return RowCodec{name, 0, C::RowBytes, C::Bits, C::Quantize, C::Dequantize,
                  simd ? C::Dot : C::DotRef, simd ? C::Axpy : C::AxpyRef};
}

}  // namespace

const RowCodec& Int8Codec() { static const RowCodec c = Make<8>("int8", true); return c; }
const RowCodec& Int4Codec() { static const RowCodec c = Make<4>("int4", true); return c; }
const RowCodec& Int8CodecRef() { static const RowCodec c = Make<8>("int8", false); return c; }
const RowCodec& Int4CodecRef() { static const RowCodec c = Make<4>("int4", false); return c; }

}  // namespace kvaudit
