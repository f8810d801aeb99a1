// Q4_1: block = fp16 d, fp16 m, 16 bytes of nibbles; value = code * d + m.
// The scalar parts are compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/q4_1.h"

#include <cfloat>

#include "base/isa.h"
#include "kv/formats/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 20;  // sizeof(block_q4_1)
static_assert(kBytes == sizeof(ggml::BlockQ4_1));
}  // namespace

namespace detail {

// quantize_row_q4_1_ref: d = (max - min) / 15, code = min(15, (int8_t)((x - min)/d + 0.5f)) with
// the unrounded f32 min and d; fp16(d), fp16(min) stored.
void Q4_1Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    ggml::StoreF16(dst + 2, min);
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = ggml::TruncF32ToI8(ggml::Rounded((x[j] - min) * id) + 0.5f);
      const int8_t c1 = ggml::TruncF32ToI8(ggml::Rounded((x[j + 16] - min) * id) + 0.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 15 ? c0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 15 ? c1 : 15);
      dst[4 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

// dequantize_row_q4_1: x*d + m, two roundings (ggml-base has no FMA).
void Q4_1Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    const float m = ggml::LoadF16(src + 2);
    for (int j = 0; j < 16; ++j) {
      y[j] = ggml::Rounded(static_cast<float>(src[4 + j] & 0x0f) * d) + m;
      y[j + 16] = ggml::Rounded(static_cast<float>(src[4 + j] >> 4) * d) + m;
    }
  }
}

}  // namespace detail

namespace {
using Block = ggml::BlockFormat<kBytes, detail::Q4_1Quantize, detail::Q4_1Dequantize>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/q4_1.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& Q4_1Codec() {
  static const RowCodec codec[3] = {Block::Make<isa_portable::Kernels>("q4_1"), Block::Make<isa_avx2::Kernels>("q4_1"),
                                    Block::Make<isa_avx512::Kernels>("q4_1")};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& Q4_1CodecRef() {
  static const RowCodec codec = Block::Make<RowKernelsRef<Block::Dequantize>>("q4_1");
  return codec;
}

namespace {
// {d, m, qs[16]}: unsigned codes; the vec_dot adds m · s of the q8_1 query block.
constexpr int8_t kCodes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
void ToCodes(const uint8_t* row, int64_t n, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    out.d[b] = ggml::LoadF16(row + b * kBytes);
    out.m[b] = ggml::LoadF16(row + b * kBytes + 2);
    ggml::NibbleCodes(row + b * kBytes + 4, kCodes, out.codes + b * ggml::kQK);
  }
}
}  // namespace

const ggml::GgmlType& Q4_1Ggml() {
  static const ggml::GgmlType type{detail::Q4_1Quantize, ToCodes, ggml::VecDotKind::kAffine};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, each value rounded exactly as Q4_1Dequantize rounds it.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBytes;
    // x·d + m with two roundings, as dequantize_row_q4_1 (ggml-base has no FMA).
    const __m512 d = ggml::BroadcastF16(blk), m = ggml::BroadcastF16(blk + 2);
    const __m512 codes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i bytes = ggml::LoadNibbleBytes(blk + 4);  // vpermps reads the low 4 bits: no mask
    v[0] = _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(_mm512_permutexvar_ps(bytes, codes), d)), m);
    v[1] =
        _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), codes), d)), m);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same two roundings on 8 lanes.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * kBytes;
    __m128i lo, hi;
    ggml::SplitNibbles(blk + 4, &lo, &hi);
    ggml::UnsignedTimesScalePlusMin(lo, hi, ggml::BroadcastF16(blk), ggml::BroadcastF16(blk + 2), v);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Block::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
