// Q4_0: block = fp16 d, 16 bytes of nibbles; value = (code - 8) * d.
// The scalar parts are compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/q4_0.h"

#include <cmath>

#include "base/isa.h"
#include "kv/formats/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 18;  // sizeof(block_q4_0)
static_assert(kBytes == sizeof(ggml::BlockQ4_0));
}  // namespace

namespace detail {

// quantize_row_q4_0_ref: d = (signed value of largest |x|, first wins) / -8, codes
// min(15, (int8_t)(x/d + 8.5f)) computed with the unrounded f32 d; d stored as fp16.
void Q4_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = ggml::TruncF32ToI8(ggml::Rounded(x[j] * id) + 8.5f);
      const int8_t c1 = ggml::TruncF32ToI8(ggml::Rounded(x[j + 16] * id) + 8.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 15 ? c0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 15 ? c1 : 15);
      dst[2 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

// dequantize_row_q4_0.
void Q4_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((src[2 + j] & 0x0f) - 8) * d;
      y[j + 16] = static_cast<float>((src[2 + j] >> 4) - 8) * d;
    }
  }
}

}  // namespace detail

namespace {
using Block = ggml::BlockFormat<kBytes, detail::Q4_0Quantize, detail::Q4_0Dequantize>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/q4_0.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& Q4_0Codec() {
  static const RowCodec codec[3] = {Block::Make<isa_portable::Kernels>("q4_0"), Block::Make<isa_avx2::Kernels>("q4_0"),
                                    Block::Make<isa_avx512::Kernels>("q4_0")};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& Q4_0CodecRef() {
  static const RowCodec codec = Block::Make<RowKernelsRef<Block::Dequantize>>("q4_0");
  return codec;
}

namespace {
// {d, qs[16]}: codes − 8.
constexpr int8_t kCodes[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
void ToCodes(const uint8_t* row, int64_t n, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    out.d[b] = ggml::LoadF16(row + b * kBytes);
    ggml::NibbleCodes(row + b * kBytes + 2, kCodes, out.codes + b * ggml::kQK);
  }
}
}  // namespace

const ggml::GgmlType& Q4_0Ggml() {
  static const ggml::GgmlType type{detail::Q4_0Quantize, ToCodes, ggml::VecDotKind::kSym};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, each value rounded exactly as Q4_0Dequantize rounds it.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBytes;
    ggml::NibbleLutDecode(blk, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), v);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same products on 8 lanes.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    ggml::NibbleLutDecode(row + u * kBytes, _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), v);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Block::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
