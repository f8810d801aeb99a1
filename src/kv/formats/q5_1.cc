// Q5_1: block = fp16 d, fp16 m, uint32 qh (5th bits), 16 bytes of nibbles; value = code * d + m.
// The scalar parts are compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/q5_1.h"

#include <cfloat>

#include "base/isa.h"
#include "kv/formats/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 24;  // sizeof(block_q5_1)
static_assert(kBytes == sizeof(ggml::BlockQ5_1));
}  // namespace

namespace detail {

// quantize_row_q5_1_ref: d = (max - min) / 31, code = (uint8_t)((x - min)/d + 0.5f) (no clamp in
// ggml: the argument stays below 32 for finite input) with the unrounded f32 min and d.
void Q5_1Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    ggml::StoreF16(dst + 2, min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t xi0 = ggml::TruncF32ToU8(ggml::Rounded((x[j] - min) * id) + 0.5f);
      const uint8_t xi1 = ggml::TruncF32ToU8(ggml::Rounded((x[j + 16] - min) * id) + 0.5f);
      dst[8 + j] = static_cast<uint8_t>((xi0 & 0x0f) | ((xi1 & 0x0f) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(dst + 4, &qh, 4);  // little-endian, as ggml's memcpy on x86
  }
}

// dequantize_row_q5_1.
void Q5_1Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    const float m = ggml::LoadF16(src + 2);
    const uint32_t qh = ggml::LoadU32(src + 4);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (src[8 + j] & 0x0f) | (((qh >> j) << 4) & 0x10);
      const int x1 = (src[8 + j] >> 4) | ((qh >> (j + 12)) & 0x10);
      y[j] = ggml::Rounded(static_cast<float>(x0) * d) + m;  // x*d + m, two roundings (no FMA)
      y[j + 16] = ggml::Rounded(static_cast<float>(x1) * d) + m;
    }
  }
}

}  // namespace detail

namespace {
using Block = ggml::BlockFormat<kBytes, detail::Q5_1Quantize, detail::Q5_1Dequantize>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/q5_1.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& Q5_1Codec() {
  static const RowCodec codec[3] = {Block::Make<isa_portable::Kernels>("q5_1"), Block::Make<isa_avx2::Kernels>("q5_1"),
                                    Block::Make<isa_avx512::Kernels>("q5_1")};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& Q5_1CodecRef() {
  static const RowCodec codec = Block::Make<RowKernelsRef<Block::Dequantize>>("q5_1");
  return codec;
}

namespace {
// {d, m, qh[4], qs[16]}: unsigned 5-bit codes; the vec_dot adds m · s of the q8_1 query block.
void ToCodes(const uint8_t* row, int64_t n, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    const uint8_t* x = row + b * kBytes;
    out.d[b] = ggml::LoadF16(x);
    out.m[b] = ggml::LoadF16(x + 2);
    const uint32_t qh = ggml::LoadU32(x + 4);
    for (int j = 0; j < ggml::kQK; ++j) out.codes[b * ggml::kQK + j] = static_cast<int8_t>(ggml::Q5Code(x + 8, qh, j));
  }
}
}  // namespace

const ggml::GgmlType& Q5_1Ggml() {
  static const ggml::GgmlType type{detail::Q5_1Quantize, ToCodes, ggml::VecDotKind::kAffine};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, each value rounded exactly as Q5_1Dequantize rounds it.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBytes;
    // code·d + m with two roundings, as dequantize_row_q5_1 (ggml-base has no FMA).
    const __m512 t0 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 t1 = _mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m512 d = ggml::BroadcastF16(blk), m = ggml::BroadcastF16(blk + 2);
    ggml::FiveBitLookup(blk + 4, blk + 8, t0, t1, v);
    v[0] = _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(v[0], d)), m);
    v[1] = _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(v[1], d)), m);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same two roundings on 8 lanes.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * kBytes;
    __m128i lo, hi;
    ggml::FiveBitCodes(blk + 4, blk + 8, &lo, &hi);
    ggml::UnsignedTimesScalePlusMin(lo, hi, ggml::BroadcastF16(blk), ggml::BroadcastF16(blk + 2), v);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Block::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
