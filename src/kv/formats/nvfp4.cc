// NVFP4 row codecs (kv/formats/nvfp4.h). The scalar parts are compiled once; the decoders once per
// kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "kv/formats/nvfp4.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/isa.h"
#include "kv/formats/codec_kernels.h"
#include "kv/formats/fp8.h"
#include "quant/e2m1.h"
#include "base/fp_contract_off.h"  // 4over6's error sums: each operation rounded

namespace kvaudit {

float Nvfp4CalibScale(float amax) {
  const float s = amax / (kE2M1Max * Fp8MaxFinite(Fp8Kind::kE4M3));
  return s > 0.0f ? s : FLT_EPSILON;
}

namespace {

// One candidate block scale: the stored e4m3 byte and the encode multiplier.
struct BlockScale {
  uint8_t sf8;
  float os;
};
BlockScale CandidateScale(float amax, float inv_global, float rcp_divisor) {
  const uint8_t sf8 = Fp8FromF32(inv_global * (amax * rcp_divisor), Fp8Kind::kE4M3);
  const float sf = Fp8ToF32(sf8, Fp8Kind::kE4M3);
  return {sf8, sf != 0.0f ? 1.0f / (sf * (1.0f / inv_global)) : 0.0f};
}

// 4over6's reconstruction error of block x [16] under the multiplier os, in x units.
float BlockError(const float* x, float os) {
  float err = 0.0f;
  if (os == 0.0f) {
    for (int k = 0; k < kNvfp4Block; k += 2) err += x[k] * x[k] + x[k + 1] * x[k + 1];
    return err;
  }
  const float deq = 1.0f / os;
  for (int k = 0; k < kNvfp4Block; k += 2) {
    const float ex = kE2M1Values[E2M1FromF32Rn(x[k] * os)] * deq - x[k];
    const float ey = kE2M1Values[E2M1FromF32Rn(x[k + 1] * os)] * deq - x[k + 1];
    err += ex * ex + ey * ey;
  }
  return err;
}

template <bool kFourOverSix>
struct Nvfp4 {
  static uint64_t RowBytes(int64_t n, const CodecParams&) {
    return static_cast<uint64_t>(n / kNvfp4Block) * kNvfp4BlockBytes;
  }
  static double Bits(int64_t, const CodecParams&) { return 8.0 * kNvfp4BlockBytes / kNvfp4Block; }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams& p) {
    const float inv_global = 1.0f / p.scale;
    for (int64_t b = 0; b < n / kNvfp4Block; ++b) {
      const float* xb = x + b * kNvfp4Block;  // [16]
      uint8_t* blk = dst + b * kNvfp4BlockBytes;
      float amax = 0.0f;
      for (int i = 0; i < kNvfp4Block; ++i) amax = std::fmax(amax, std::fabs(xb[i]));  // NaN left out
      BlockScale s = CandidateScale(amax, inv_global, 1.0f / 6.0f);
      if constexpr (kFourOverSix) {
        const BlockScale s4 = CandidateScale(amax, inv_global, 0.25f);
        if (BlockError(xb, s4.os) < BlockError(xb, s.os)) s = s4;
      }
      blk[0] = s.sf8;
      for (int k = 0; k < kNvfp4Block / 2; ++k) {
        blk[1 + k] = static_cast<uint8_t>(E2M1FromF32Rn(xb[2 * k] * s.os) | (E2M1FromF32Rn(xb[2 * k + 1] * s.os) << 4));
      }
    }
  }
  // (e2m1 · sf) · k_scale: the first product is exact (2 + 4 significant bits), so this is the
  // exact value rounded once to f32.
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams& p) {
    for (int64_t b = 0; b < n / kNvfp4Block; ++b) {
      const uint8_t* blk = src + b * kNvfp4BlockBytes;
      const float sf = Fp8ToF32(blk[0], Fp8Kind::kE4M3);
      for (int k = 0; k < kNvfp4Block / 2; ++k) {
        y[b * kNvfp4Block + 2 * k] = kE2M1Values[blk[1 + k] & 0x0F] * sf * p.scale;
        y[b * kNvfp4Block + 2 * k + 1] = kE2M1Values[blk[1 + k] >> 4] * sf * p.scale;
      }
    }
  }
};

template <bool kFourOverSix, class Kernels>
RowCodec Make() {
  using C = Nvfp4<kFourOverSix>;
  return MakeRowCodec<Kernels>(kFourOverSix ? "nvfp4_4over6" : "nvfp4", kNvfp4Block, C::RowBytes, C::Bits, C::Quantize,
                               C::Dequantize);
}
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/nvfp4.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

namespace {
template <bool kFourOverSix>
const RowCodec& Codec() {
  static const RowCodec codec[3] = {Make<kFourOverSix, isa_portable::Kernels<kFourOverSix>>(),
                                    Make<kFourOverSix, isa_avx2::Kernels<kFourOverSix>>(),
                                    Make<kFourOverSix, isa_avx512::Kernels<kFourOverSix>>()};
  return codec[static_cast<int>(ActiveIsa())];
}
template <bool kFourOverSix>
const RowCodec& CodecRef() {
  static const RowCodec codec = Make<kFourOverSix, RowKernelsRef<Nvfp4<kFourOverSix>::Dequantize>>();
  return codec;
}
}  // namespace

const RowCodec& Nvfp4Codec() { return Codec<false>(); }
const RowCodec& Nvfp4CodecRef() { return CodecRef<false>(); }
const RowCodec& Nvfp4FourOverSixCodec() { return Codec<true>(); }
const RowCodec& Nvfp4FourOverSixCodecRef() { return CodecRef<true>(); }

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"
#include "kv/formats/e2m1_simd.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, (e2m1 · sf) · k_scale as Nvfp4::Dequantize rounds it.
struct Decoder {
  static constexpr int kUnit = kNvfp4Block;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m512* v) {
    const uint8_t* blk = row + u * kNvfp4BlockBytes;
    const __m512 sf = _mm512_set1_ps(Fp8ToF32(blk[0], Fp8Kind::kE4M3));
    v[0] = _mm512_mul_ps(_mm512_mul_ps(E2M1Decode16(blk + 1), sf), _mm512_set1_ps(p.scale));
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same on 8 lanes.
struct Decoder {
  static constexpr int kUnit = kNvfp4Block;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m256* v) {
    const uint8_t* blk = row + u * kNvfp4BlockBytes;
    const __m256 sf = _mm256_set1_ps(Fp8ToF32(blk[0], Fp8Kind::kE4M3)), g = _mm256_set1_ps(p.scale);
    E2M1Decode16(blk + 1, v);
    v[0] = _mm256_mul_ps(_mm256_mul_ps(v[0], sf), g);
    v[1] = _mm256_mul_ps(_mm256_mul_ps(v[1], sf), g);
  }
};
#endif
template <bool kFourOverSix>
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Nvfp4<kFourOverSix>::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
