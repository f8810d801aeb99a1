// The float row codecs' kernel slots per kernel path (kv/formats/float_row_kernels.h): the
// AVX-512 kernels over a format's Load16 in the AVX-512 pass, the 8-lane kernels over its Load8
// (codec_kernels_avx2.inl.h) in the AVX2 pass, the in-place scalar twins over Load
// (FloatRowKernelsRef) in the portable pass. No include guard and no includes: a float format's
// pass section (base/isa_passes.h) includes it after "kv/formats/codec_kernels_simd.inl.h".
#undef KVAUDIT_FLOAT_ROW_KERNELS
#if defined(KVAUDIT_ISA_AVX512)
using FloatLoad16 = __m512 (*)(const uint8_t* src, int64_t i);

// kv/formats/codec_kernels.h decoder: 16 stored values per unit.
template <FloatLoad16 Load16>
struct FloatDecoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) { v[0] = Load16(row, 16 * u); }
};

#define KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load8, Load, Dequantize) RowKernels<FloatDecoder<Load16>, Dequantize>
#elif defined(KVAUDIT_ISA_AVX2)
#include "kv/formats/float_row_kernels_ref.inl.h"  // this pass's own copy of the twins (their fallback)
using FloatLoad8 = __m256 (*)(const uint8_t* src, int64_t i);

// kv/formats/codec_kernels_avx2.inl.h decoder: 16 stored values per unit. Rows of other lengths
// take the in-place twin, which has no bound on the row length.
template <FloatLoad8 Load8>
struct FloatDecoder8 {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m256* v) {
    v[0] = Load8(row, 16 * u);
    v[1] = Load8(row, 16 * u + 8);
  }
};
// Load16 is dropped unexpanded: only the AVX-512 pass defines it.
#define KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load8, Load, Dequantize) \
  RowKernelsAvx2<FloatDecoder8<Load8>, FloatRowKernelsRef<Load>>
#else
// Load16 and Load8 are dropped unexpanded: the portable pass defines neither.
#define KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load8, Load, Dequantize) FloatRowKernelsRef<Load>
#endif
