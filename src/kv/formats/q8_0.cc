// Q8_0: block = fp16 d, 32 int8 codes; value = code * d.
// The scalar parts are compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/q8_0.h"

#include <cmath>
#include <cstring>

#include "base/isa.h"
#include "kv/formats/ggml_blocks.h"
#include "kv/formats/q8_activation.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 34;  // sizeof(block_q8_0)
static_assert(kBytes == sizeof(ggml::BlockQ8_0));
}  // namespace

namespace detail {

// quantize_row_q8_0_ref: d = amax / 127, id = 1/d, code = roundf(x * id) (half away from zero).
// (The x86 ggml-cpu from_float differs: see kv/formats/q8_activation.h QuantizeQ8_0RowX86.)
void Q8_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float amax = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX macro (NaN handling included)
    }
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    for (int j = 0; j < ggml::kQK; ++j) {
      // roundf result is within [-127, 127] for finite input; the int8 store is C's conversion.
      dst[2 + j] = static_cast<uint8_t>(ggml::TruncF32ToI8(std::round(x[j] * id)));
    }
  }
}

// dequantize_row_q8_0.
void Q8_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    for (int j = 0; j < ggml::kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

}  // namespace detail

namespace {
using Block = ggml::BlockFormat<kBytes, detail::Q8_0Quantize, detail::Q8_0Dequantize>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/q8_0.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& Q8_0Codec() {
  static const RowCodec codec[3] = {Block::Make<isa_portable::Kernels>("q8_0"), Block::Make<isa_avx2::Kernels>("q8_0"),
                                    Block::Make<isa_avx512::Kernels>("q8_0")};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& Q8_0CodecRef() {
  static const RowCodec codec = Block::Make<RowKernelsRef<Block::Dequantize>>("q8_0");
  return codec;
}

namespace {
// block_q8_0 {d, qs[32]}: the codes as stored.
void ToCodes(const uint8_t* row, int64_t n, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    const uint8_t* x = row + b * kBytes;
    out.d[b] = ggml::LoadF16(x);
    std::memcpy(out.codes + b * ggml::kQK, x + 2, ggml::kQK);
  }
}
}  // namespace

const ggml::GgmlType& Q8_0Ggml() {
  static const ggml::GgmlType type{QuantizeQ8_0RowX86, ToCodes, ggml::VecDotKind::kSym};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
inline __m512 Codes16(const uint8_t* p) {  // 16 int8 -> 16 f32
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
// kv/formats/codec_kernels.h decoder: one block, each value rounded exactly as Q8_0Dequantize rounds it.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBytes;
    const __m512 d = ggml::BroadcastF16(blk);
    v[0] = _mm512_mul_ps(Codes16(blk + 2), d);
    v[1] = _mm512_mul_ps(Codes16(blk + 18), d);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same products on 8 lanes.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * kBytes;
    ggml::SignedTimesScale(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)), ggml::BroadcastF16(blk), v);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Block::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
