// The float row codecs' kernel slots per kernel path (kv/formats/float_row_kernels.h): the
// AVX-512 kernels over a format's Load16 in the AVX-512 pass, the in-place scalar twins over Load
// (FloatRowKernelsRef; the AVX2 pass compiles its own copy) in the AVX2 and portable passes, as the x86-64-v3 build had
// them. No include guard and no includes: a float format's pass section (base/isa_passes.h)
// includes it after "kv/formats/codec_kernels_simd.inl.h".
#undef KVAUDIT_FLOAT_ROW_KERNELS
#if defined(KVAUDIT_ISA_AVX512)
using FloatLoad16 = __m512 (*)(const uint8_t* src, int64_t i);

// kv/formats/codec_kernels.h decoder: 16 stored values per unit.
template <FloatLoad16 Load16>
struct FloatDecoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) { v[0] = Load16(row, 16 * u); }
};

#define KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load, Dequantize) RowKernels<FloatDecoder<Load16>, Dequantize>
#else
#if defined(KVAUDIT_ISA_AVX2)  // this pass's own copy of the in-place twins (hardware FMA)
#include "kv/formats/float_row_kernels_ref.inl.h"
#endif
// Load16 is dropped unexpanded: only the AVX-512 pass defines it.
#define KVAUDIT_FLOAT_ROW_KERNELS(Load16, Load, Dequantize) FloatRowKernelsRef<Load>
#endif
