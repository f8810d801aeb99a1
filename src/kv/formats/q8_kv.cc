// q8_KV row codec (kv/formats/q8_kv.h). The scalar parts are compiled once; the decoder once per
// kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/q8_kv.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/isa.h"
#include "kv/formats/codec_kernels.h"

namespace kvaudit {
namespace {

// ik_llama.cpp's code for id·x on x86: round half to even (_mm256_round_ps), then cvtps_epi32,
// whose NaN and ±inf give INT_MIN, which the packs saturate to -128. A finite v is within 127.00004
// (id·amax rounds to 127) but for a subnormal d, whose 1/d is inf.
inline int8_t Q8KvCode(float v) {
  if (!std::isfinite(v)) return -128;
  return static_cast<int8_t>(std::nearbyint(v));
}

struct Q8Kv {
  static uint64_t RowBytes(int64_t n, const CodecParams&) { return static_cast<uint64_t>(n + kQ8KvHeaderBytes); }
  static double Bits(int64_t n, const CodecParams&) { return 8.0 * static_cast<double>(n + kQ8KvHeaderBytes) / n; }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));  // a NaN never wins
    int8_t* q = reinterpret_cast<int8_t*>(dst + kQ8KvHeaderBytes);           // [n]
    int32_t sum = 0;
    float d = 0.0f;
    if (amax > 0.0f) {
      d = amax / 127.0f;
      const float id = 1.0f / d;
      for (int64_t i = 0; i < n; ++i) {
        q[i] = Q8KvCode(id * x[i]);
        sum += q[i];
      }
    } else {
      std::memset(q, 0, static_cast<size_t>(n));
    }
    std::memcpy(dst, &d, 4);
    std::memcpy(dst + 4, &sum, 4);
  }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    float d;
    std::memcpy(&d, src, 4);
    const int8_t* q = reinterpret_cast<const int8_t*>(src + kQ8KvHeaderBytes);
    for (int64_t i = 0; i < n; ++i) y[i] = d * static_cast<float>(q[i]);
  }
};

template <class Kernels>
RowCodec Make() {
  return MakeRowCodec<Kernels>("q8_KV", kQ8KvRowMultiple, Q8Kv::RowBytes, Q8Kv::Bits, Q8Kv::Quantize, Q8Kv::Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/q8_kv.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

const RowCodec& Q8KvCodec() {
  static const RowCodec codec[3] = {Make<isa_portable::Kernels>(), Make<isa_avx2::Kernels>(),
                                    Make<isa_avx512::Kernels>()};
  return codec[static_cast<int>(ActiveIsa())];
}
const RowCodec& Q8KvCodecRef() {
  static const RowCodec codec = Make<RowKernelsRef<Q8Kv::Dequantize>>();
  return codec;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"

namespace {
inline float RowScale(const uint8_t* row) {
  float d;
  std::memcpy(&d, row, 4);
  return d;
}
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: 16 codes of the row, d · q as Q8Kv::Dequantize computes it.
struct Decoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kQ8KvHeaderBytes + 16 * u));
    v[0] = _mm512_mul_ps(_mm512_set1_ps(RowScale(row)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same d · q on 8 lanes.
struct Decoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kQ8KvHeaderBytes + 16 * u));
    const __m256 d = _mm256_set1_ps(RowScale(row));
    v[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
    v[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q, q))));
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Q8Kv::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
