// SGLang fp4_mx_block16 row codec (kv/formats/fp4_mx_block16.h). The scalar parts are compiled
// once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/fp4_mx_block16.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/isa.h"
#include "kv/formats/codec_kernels.h"
#include "quant/e2m1.h"

namespace kvaudit {
namespace {

constexpr int kMinExponent = -33;  // ceil(log2(1e-10f))

// ceil(log2(v)) for a finite v > 0, exactly: frexp gives v = m·2^k with m in [0.5, 1), so
// log2 v = k + log2 m lies in [k − 1, k), and is an integer (k − 1) only when m = 0.5.
int CeilLog2(float v) {
  int k;
  const float m = std::frexp(v, &k);
  return m == 0.5f ? k - 1 : k;
}

// SGLang's count of thresholds passed: ties go up.
uint8_t MxCode(float x, float inv_pow2) {
  static constexpr float kThresholds[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const float a = std::fabs(x * inv_pow2);  // exact: a power of two
  uint8_t m = 0;
  for (float t : kThresholds) m += a >= t ? 1 : 0;
  return static_cast<uint8_t>((x < 0.0f ? 8 : 0) | m);
}

inline float BlockPow2(uint8_t byte) { return std::ldexp(1.0f, static_cast<int>(byte) - 127); }

struct Fp4MxBlock16 {
  static uint64_t RowBytes(int64_t n, const CodecParams&) {
    return static_cast<uint64_t>(n / kFp4MxBlock) * kFp4MxBlockBytes;
  }
  static double Bits(int64_t, const CodecParams&) { return 8.0 * kFp4MxBlockBytes / kFp4MxBlock; }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) {
    for (int64_t b = 0; b < n / kFp4MxBlock; ++b) {
      const float* xb = x + b * kFp4MxBlock;  // [16]
      uint8_t* blk = dst + b * kFp4MxBlockBytes;
      float amax = 0.0f;
      bool finite = true;
      for (int i = 0; i < kFp4MxBlock; ++i) {
        finite = finite && std::isfinite(xb[i]);
        amax = std::fmax(amax, std::fabs(xb[i]));
      }
      std::memset(blk, 0, kFp4MxBlockBytes);
      if (!finite) continue;  // every code 0 (kv/formats/fp4_mx_block16.h)
      const int e = std::max(CeilLog2(std::fmax(amax / 6.0f, 1e-10f)), kMinExponent);
      blk[0] = static_cast<uint8_t>(e + 127);
      const float inv_pow2 = std::ldexp(1.0f, -e);
      for (int k = 0; k < kFp4MxBlock / 2; ++k) {
        blk[1 + k] = static_cast<uint8_t>(MxCode(xb[2 * k], inv_pow2) | (MxCode(xb[2 * k + 1], inv_pow2) << 4));
      }
    }
  }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    for (int64_t b = 0; b < n / kFp4MxBlock; ++b) {
      const uint8_t* blk = src + b * kFp4MxBlockBytes;
      const float s = BlockPow2(blk[0]);
      for (int k = 0; k < kFp4MxBlock / 2; ++k) {
        y[b * kFp4MxBlock + 2 * k] = kE2M1Values[blk[1 + k] & 0x0F] * s;
        y[b * kFp4MxBlock + 2 * k + 1] = kE2M1Values[blk[1 + k] >> 4] * s;
      }
    }
  }
};

template <class Kernels>
RowCodec Make() {
  using C = Fp4MxBlock16;
  return MakeRowCodec<Kernels>("fp4_mx_block16", kFp4MxBlock, C::RowBytes, C::Bits, C::Quantize, C::Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/fp4_mx_block16.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

const RowCodec& Fp4MxBlock16Codec() {
  static const RowCodec codec[3] = {Make<isa_portable::Kernels>(), Make<isa_avx2::Kernels>(),
                                    Make<isa_avx512::Kernels>()};
  return codec[static_cast<int>(ActiveIsa())];
}
const RowCodec& Fp4MxBlock16CodecRef() {
  static const RowCodec codec = Make<RowKernelsRef<Fp4MxBlock16::Dequantize>>();
  return codec;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"
#include "kv/formats/e2m1_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, e2m1 · 2^(byte − 127) as Fp4MxBlock16::Dequantize.
struct Decoder {
  static constexpr int kUnit = kFp4MxBlock;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kFp4MxBlockBytes;
    v[0] = _mm512_mul_ps(E2M1Decode16(blk + 1), _mm512_set1_ps(BlockPow2(blk[0])));
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same on 8 lanes.
struct Decoder {
  static constexpr int kUnit = kFp4MxBlock;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * kFp4MxBlockBytes;
    const __m256 s = _mm256_set1_ps(BlockPow2(blk[0]));
    E2M1Decode16(blk + 1, v);
    v[0] = _mm256_mul_ps(v[0], s);
    v[1] = _mm256_mul_ps(v[1], s);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Fp4MxBlock16::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
