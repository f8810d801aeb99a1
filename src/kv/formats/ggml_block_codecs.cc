// The row codecs of llama.cpp's 32-element block formats: the number format's bytes and reference
// arithmetic (quant/<format>.cc, through the traits row) plus, once per kernel path
// (base/isa_passes.h), each format's in-register block decoder, which attention's dot/axpy kernels
// (kv/formats/codec_kernels.h) run on. Every decoder gives each value rounded exactly as the
// format's reference dequantizer rounds it.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/formats/ggml_block_codecs.h"

#include "base/isa.h"
#include "kv/formats/block_format.h"
#include "quant/q8_activation.h"

namespace kvaudit {
namespace {
using Q8_0Block = BlockFormat<QuantType::kQ8_0>;
using Q4_0Block = BlockFormat<QuantType::kQ4_0>;
using Q4_1Block = BlockFormat<QuantType::kQ4_1>;
using Q5_0Block = BlockFormat<QuantType::kQ5_0>;
using Q5_1Block = BlockFormat<QuantType::kQ5_1>;
using Iq4NlBlock = BlockFormat<QuantType::kIQ4_NL>;
}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "kv/formats/ggml_block_codecs.cc"
#include "base/isa_passes.h"  // the decoders below, once per kernel path

namespace kvaudit {
namespace {

// The active path's codec at call time (ForceIsaForTesting switches what later callers get).
template <class Block, class OnPortable, class OnAvx2, class OnAvx512>
const RowCodec& ActiveCodec() {
  static const RowCodec codec[3] = {Block::template Make<OnPortable>(), Block::template Make<OnAvx2>(),
                                    Block::template Make<OnAvx512>()};
  return codec[static_cast<int>(ActiveIsa())];
}

template <class Block>
const RowCodec& RefCodec() {
  static const RowCodec codec = Block::template Make<RowKernelsRef<Block::Dequantize>>();
  return codec;
}

// llama.cpp's type traits: from_float writes the cache, the traits row's expanded codes feed the
// integer dot of kind `vec_dot`.
template <class Block>
ggml::GgmlType GgmlTraits(void (*from_float)(const float*, uint8_t*, int64_t), ggml::VecDotKind vec_dot) {
  return ggml::GgmlType{from_float, Block::kTraits.to_codes, vec_dot};
}

}  // namespace

#define KVAUDIT_BLOCK_CODEC_PATHS(Fmt) isa_portable::Fmt##Kernels, isa_avx2::Fmt##Kernels, isa_avx512::Fmt##Kernels

const RowCodec& Q8_0Codec() { return ActiveCodec<Q8_0Block, KVAUDIT_BLOCK_CODEC_PATHS(Q8_0)>(); }
const RowCodec& Q4_0Codec() { return ActiveCodec<Q4_0Block, KVAUDIT_BLOCK_CODEC_PATHS(Q4_0)>(); }
const RowCodec& Q4_1Codec() { return ActiveCodec<Q4_1Block, KVAUDIT_BLOCK_CODEC_PATHS(Q4_1)>(); }
const RowCodec& Q5_0Codec() { return ActiveCodec<Q5_0Block, KVAUDIT_BLOCK_CODEC_PATHS(Q5_0)>(); }
const RowCodec& Q5_1Codec() { return ActiveCodec<Q5_1Block, KVAUDIT_BLOCK_CODEC_PATHS(Q5_1)>(); }
const RowCodec& Iq4NlCodec() { return ActiveCodec<Iq4NlBlock, KVAUDIT_BLOCK_CODEC_PATHS(Iq4Nl)>(); }

const RowCodec& Q8_0CodecRef() { return RefCodec<Q8_0Block>(); }
const RowCodec& Q4_0CodecRef() { return RefCodec<Q4_0Block>(); }
const RowCodec& Q4_1CodecRef() { return RefCodec<Q4_1Block>(); }
const RowCodec& Q5_0CodecRef() { return RefCodec<Q5_0Block>(); }
const RowCodec& Q5_1CodecRef() { return RefCodec<Q5_1Block>(); }
const RowCodec& Iq4NlCodecRef() { return RefCodec<Iq4NlBlock>(); }

// q8_0 rows are written by the x86 quantize_row_q8_0 (round half to even, quant/q8_activation.h),
// the others by their reference quantizer; q4_1/q5_1 dot with a q8_1 query (Σ m·s added).
const ggml::GgmlType& Q8_0Ggml() {
  static const ggml::GgmlType t = GgmlTraits<Q8_0Block>(QuantizeQ8_0RowX86, ggml::VecDotKind::kSym);
  return t;
}
const ggml::GgmlType& Q4_0Ggml() {
  static const ggml::GgmlType t = GgmlTraits<Q4_0Block>(Q4_0Block::kTraits.quantize_ref, ggml::VecDotKind::kSym);
  return t;
}
const ggml::GgmlType& Q4_1Ggml() {
  static const ggml::GgmlType t = GgmlTraits<Q4_1Block>(Q4_1Block::kTraits.quantize_ref, ggml::VecDotKind::kAffine);
  return t;
}
const ggml::GgmlType& Q5_0Ggml() {
  static const ggml::GgmlType t = GgmlTraits<Q5_0Block>(Q5_0Block::kTraits.quantize_ref, ggml::VecDotKind::kSym);
  return t;
}
const ggml::GgmlType& Q5_1Ggml() {
  static const ggml::GgmlType t = GgmlTraits<Q5_1Block>(Q5_1Block::kTraits.quantize_ref, ggml::VecDotKind::kAffine);
  return t;
}
const ggml::GgmlType& Iq4NlGgml() {
  static const ggml::GgmlType t = GgmlTraits<Iq4NlBlock>(Iq4NlBlock::kTraits.quantize_ref, ggml::VecDotKind::kIq4Nl);
  return t;
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "kv/formats/block_format_kernels.inl.h"

namespace {
#if defined(KVAUDIT_ISA_AVX512)
inline __m512 Codes16(const uint8_t* p) {  // 16 int8 -> 16 f32
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// Decoders for kv/formats/codec_kernels.h: v[0..1] = the 32 values of block u of the row.
struct Q8_0Decoder {  // code·d
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ8_0);
    const __m512 d = ggml::BroadcastF16(blk);
    v[0] = _mm512_mul_ps(Codes16(blk + 2), d);
    v[1] = _mm512_mul_ps(Codes16(blk + 18), d);
  }
};
struct Q4_0Decoder {  // (code − 8)·d
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ4_0);
    ggml::NibbleLutDecode(blk, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), v);
  }
};
struct Q4_1Decoder {  // code·d + m, two roundings (ggml-base has no FMA)
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ4_1);
    const __m512 d = ggml::BroadcastF16(blk), m = ggml::BroadcastF16(blk + 2);
    const __m512 codes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i bytes = ggml::LoadNibbleBytes(blk + 4);  // vpermps reads the low 4 bits: no mask
    v[0] = _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(_mm512_permutexvar_ps(bytes, codes), d)), m);
    v[1] =
        _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), codes), d)), m);
  }
};
struct Q5_0Decoder {  // (code − 16)·d: the tables hold code − 16
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ5_0);
    const __m512 t0 = _mm512_setr_ps(-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1);
    const __m512 t1 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 d = ggml::BroadcastF16(blk);
    ggml::FiveBitLookup(blk + 2, blk + 6, t0, t1, v);
    v[0] = _mm512_mul_ps(v[0], d);
    v[1] = _mm512_mul_ps(v[1], d);
  }
};
struct Q5_1Decoder {  // code·d + m, two roundings
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ5_1);
    const __m512 t0 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 t1 = _mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m512 d = ggml::BroadcastF16(blk), m = ggml::BroadcastF16(blk + 2);
    ggml::FiveBitLookup(blk + 4, blk + 8, t0, t1, v);
    v[0] = _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(v[0], d)), m);
    v[1] = _mm512_add_ps(ggml::RoundedV(_mm512_mul_ps(v[1], d)), m);
  }
};
struct Iq4NlDecoder {  // kvalues_iq4nl[code]·d
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockIq4Nl);
    ggml::NibbleLutDecode(blk, _mm512_loadu_ps(ggml::kIq4NlValuesF.v), v);
  }
};
#elif defined(KVAUDIT_ISA_AVX2)
// Decoders for kv/formats/codec_kernels_avx2.inl.h: the same values on 8 lanes, v[0..3].
struct Q8_0Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ8_0);
    ggml::SignedTimesScale(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)), ggml::BroadcastF16(blk), v);
  }
};
struct Q4_0Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    ggml::NibbleLutDecode(row + u * sizeof(ggml::BlockQ4_0),
                          _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), v);
  }
};
struct Q4_1Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ4_1);
    __m128i lo, hi;
    ggml::SplitNibbles(blk + 4, &lo, &hi);
    ggml::UnsignedTimesScalePlusMin(lo, hi, ggml::BroadcastF16(blk), ggml::BroadcastF16(blk + 2), v);
  }
};
struct Q5_0Decoder {  // code − 16 fits an int8
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ5_0);
    __m128i lo, hi;
    ggml::FiveBitCodes(blk + 2, blk + 6, &lo, &hi);
    const __m128i sixteen = _mm_set1_epi8(16);
    ggml::SignedTimesScale(_mm_sub_epi8(lo, sixteen), _mm_sub_epi8(hi, sixteen), ggml::BroadcastF16(blk), v);
  }
};
struct Q5_1Decoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    const uint8_t* blk = row + u * sizeof(ggml::BlockQ5_1);
    __m128i lo, hi;
    ggml::FiveBitCodes(blk + 4, blk + 8, &lo, &hi);
    ggml::UnsignedTimesScalePlusMin(lo, hi, ggml::BroadcastF16(blk), ggml::BroadcastF16(blk + 2), v);
  }
};
struct Iq4NlDecoder {
  static constexpr int kUnit = ggml::kQK;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    ggml::NibbleLutDecode(row + u * sizeof(ggml::BlockIq4Nl),
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(ggml::kIq4NlValues)), v);
  }
};
#endif
using Q8_0Kernels = KVAUDIT_ROW_KERNELS(Q8_0Decoder, Q8_0Block::Dequantize);
using Q4_0Kernels = KVAUDIT_ROW_KERNELS(Q4_0Decoder, Q4_0Block::Dequantize);
using Q4_1Kernels = KVAUDIT_ROW_KERNELS(Q4_1Decoder, Q4_1Block::Dequantize);
using Q5_0Kernels = KVAUDIT_ROW_KERNELS(Q5_0Decoder, Q5_0Block::Dequantize);
using Q5_1Kernels = KVAUDIT_ROW_KERNELS(Q5_1Decoder, Q5_1Block::Dequantize);
using Iq4NlKernels = KVAUDIT_ROW_KERNELS(Iq4NlDecoder, Iq4NlBlock::Dequantize);
}  // namespace

#endif  // KVAUDIT_ISA_PASS
