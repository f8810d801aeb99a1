// Q5_0: block = fp16 d, uint32 qh (5th bits), 16 bytes of nibbles; value = (code - 16) * d.
// The scalar parts are compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/q5_0.h"

#include <cmath>

#include "base/isa.h"
#include "kv/formats/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 22;  // sizeof(block_q5_0)
static_assert(kBytes == sizeof(ggml::BlockQ5_0));
}  // namespace

namespace detail {

// quantize_row_q5_0_ref: d = (signed value of largest |x|, first wins) / -16, code =
// min(31, (int8_t)(x/d + 16.5f)) with the unrounded f32 d; bit 4 of code j goes to qh bit j.
void Q5_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = ggml::TruncF32ToI8(ggml::Rounded(x[j] * id) + 16.5f);
      const int8_t c1 = ggml::TruncF32ToI8(ggml::Rounded(x[j + 16] * id) + 16.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 31 ? c0 : 31);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 31 ? c1 : 31);
      dst[6 + j] = static_cast<uint8_t>((xi0 & 0x0f) | ((xi1 & 0x0f) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(dst + 2, &qh, 4);  // little-endian, as ggml's memcpy on x86
  }
}

// dequantize_row_q5_0.
void Q5_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    const uint32_t qh = ggml::LoadU32(src + 2);
    for (int j = 0; j < 16; ++j) {
      const int x0 = ((src[6 + j] & 0x0f) | (((qh >> j) << 4) & 0x10)) - 16;
      const int x1 = ((src[6 + j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

}  // namespace detail

namespace {
using Block = ggml::BlockFormat<kBytes, detail::Q5_0Quantize, detail::Q5_0Dequantize>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/q5_0.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& Q5_0Codec() {
  static const RowCodec codec[3] = {Block::Make<isa_portable::Kernels>("q5_0"), Block::Make<isa_avx2::Kernels>("q5_0"),
                                    Block::Make<isa_avx512::Kernels>("q5_0")};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& Q5_0CodecRef() {
  static const RowCodec codec = Block::Make<RowKernelsRef<Block::Dequantize>>("q5_0");
  return codec;
}

namespace {
// {d, qh[4], qs[16]}: 5-bit codes − 16.
void ToCodes(const uint8_t* row, int64_t n, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    const uint8_t* x = row + b * kBytes;
    out.d[b] = ggml::LoadF16(x);
    const uint32_t qh = ggml::LoadU32(x + 2);
    for (int j = 0; j < ggml::kQK; ++j)
      out.codes[b * ggml::kQK + j] = static_cast<int8_t>(ggml::Q5Code(x + 6, qh, j) - 16);
  }
}
}  // namespace

const ggml::GgmlType& Q5_0Ggml() {
  static const ggml::GgmlType type{detail::Q5_0Quantize, ToCodes, ggml::VecDotKind::kSym};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, each value rounded exactly as Q5_0Dequantize rounds it.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBytes;
    // (code − 16)·d: the table holds code − 16.
    const __m512 t0 = _mm512_setr_ps(-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1);
    const __m512 t1 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 d = ggml::BroadcastF16(blk);
    ggml::FiveBitLookup(blk + 2, blk + 6, t0, t1, v);
    v[0] = _mm512_mul_ps(v[0], d);
    v[1] = _mm512_mul_ps(v[1], d);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: (code − 16)·d on 8 lanes (code − 16 fits an int8).
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * kBytes;
    __m128i lo, hi;
    ggml::FiveBitCodes(blk + 2, blk + 6, &lo, &hi);
    const __m128i sixteen = _mm_set1_epi8(16);
    ggml::SignedTimesScale(_mm_sub_epi8(lo, sixteen), _mm_sub_epi8(hi, sixteen), ggml::BroadcastF16(blk), v);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Block::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
