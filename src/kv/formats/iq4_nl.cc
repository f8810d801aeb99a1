// IQ4_NL: block = fp16 d, 16 bytes of nibbles; value = kvalues_iq4nl[code] * d.
// The scalar parts are compiled once; the decoder once per kernel path (base/isa_passes.h).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/iq4_nl.h"

#include <cmath>

#include "base/isa.h"
#include "kv/formats/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 18;  // sizeof(block_iq4_nl)
static_assert(kBytes == sizeof(ggml::BlockIq4Nl));

constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

// best_index_int8 (ggml-quants.c): nearest table entry by a branch-free binary search on 2x;
// an exact midpoint goes to the upper entry.
int BestIndexInt8(float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int step = 8; step > 0; step >>= 1) {
    const int j = idx + step;
    idx = (x2 >= static_cast<float>(ggml::kIq4NlValues[j - 1] + ggml::kIq4NlValues[j])) ? j : idx;
  }
  return idx;
}
}  // namespace

namespace detail {

// quantize_row_iq4_nl_ref = quantize_row_iq4_nl_impl(32, 32, ..., quant_weights = NULL, ntry = -1),
// what ggml-cpu's from_float (quantize_row_iq4_nl) calls for KV writes: weights w = x², initial
// scale d0 = max/-127 (max = signed value of largest |x|, first wins), codes = nearest table entry
// of x/d0, then the weighted least-squares refit d = Σwqx/Σwq² is stored. With ntry <= 0 there is
// no scale search and the codes are NOT recomputed with the refit d.
// All-|x| < 1e-15 blocks: d = 0 and codes 0. (Upstream before the `memset(Lb, 0, ...)` fix left
// the codes of such a block stale from the caller's L buffer; the values are 0 either way.)
void Iq4NlQuantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    uint8_t codes[ggml::kQK] = {};  // [32] L
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    float d = 0.0f;
    if (!(amax < kGroupMaxEps)) {
      const float d0 = max / static_cast<float>(ggml::kIq4NlValues[0]);
      const float id = 1 / d0;
      float sumqx = 0.0f, sumq2 = 0.0f;
      for (int j = 0; j < ggml::kQK; ++j) {
        const int l = BestIndexInt8(id * x[j]);
        codes[j] = static_cast<uint8_t>(l);
        const float q = ggml::kIq4NlValues[l];
        const float w = x[j] * x[j];
        // sumqx += w*q*x[j]; sumq2 += w*q*q: left-to-right products, no FMA (ggml-base).
        sumqx = ggml::Rounded(ggml::Rounded(w * q) * x[j]) + sumqx;
        sumq2 = ggml::Rounded(ggml::Rounded(w * q) * q) + sumq2;
      }
      d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    }
    ggml::StoreF16(dst, d);
    for (int j = 0; j < 16; ++j) dst[2 + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
  }
}

// dequantize_row_iq4_nl.
void Iq4NlDequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(ggml::kIq4NlValues[src[2 + j] & 0x0f]);
      y[j + 16] = d * static_cast<float>(ggml::kIq4NlValues[src[2 + j] >> 4]);
    }
  }
}

}  // namespace detail

namespace {
using Block = ggml::BlockFormat<kBytes, detail::Iq4NlQuantize, detail::Iq4NlDequantize>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/iq4_nl.cc"
#include "base/isa_passes.h"  // the decoder below, once per kernel path

namespace kvaudit {

// The active path's kernels at call time (ForceIsaForTesting switches what later callers get).
const RowCodec& Iq4NlCodec() {
  static const RowCodec codec[3] = {Block::Make<isa_portable::Kernels>("iq4_nl"),
                                    Block::Make<isa_avx2::Kernels>("iq4_nl"),
                                    Block::Make<isa_avx512::Kernels>("iq4_nl")};
  return codec[static_cast<int>(ActiveIsa())];
}

const RowCodec& Iq4NlCodecRef() {
  static const RowCodec codec = Block::Make<RowKernelsRef<Block::Dequantize>>("iq4_nl");
  return codec;
}

namespace {
// {d, qs[16]}: codes index kvalues_iq4nl.
void ToCodes(const uint8_t* row, int64_t n, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    out.d[b] = ggml::LoadF16(row + b * kBytes);
    ggml::NibbleCodes(row + b * kBytes + 2, ggml::kIq4NlValues, out.codes + b * ggml::kQK);
  }
}
}  // namespace

const ggml::GgmlType& Iq4NlGgml() {
  static const ggml::GgmlType type{detail::Iq4NlQuantize, ToCodes, ggml::VecDotKind::kIq4Nl};
  return type;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
// kv/formats/codec_kernels.h decoder: one block, each value rounded exactly as Iq4NlDequantize rounds it.
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * kBytes;
    // kvalues_iq4nl as floats (ggml_blocks.h kIq4NlValues).
    ggml::NibbleLutDecode(blk, _mm512_setr_ps(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113),
                          v);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// kv/formats/codec_kernels_avx2.inl.h decoder: the same products on 8 lanes (kvalues_iq4nl as int8).
struct Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    ggml::NibbleLutDecode(row + u * kBytes,
                          _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), v);
  }
};
#endif
using Kernels = KVAUDIT_ROW_KERNELS(Decoder, Block::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
