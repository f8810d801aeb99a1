// Pieces shared by the float row codecs (f32, f16, bf16): they differ only in how stored values
// become floats (Load: one value; Load16: 16 values into a zmm, exact in every case). Their
// dot/axpy kernels come from kv/formats/codec_kernels.h with FloatDecoder.
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include <cstdint>

#include "kv/formats/codec_kernels.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

using FloatLoad = float (*)(const uint8_t* src, int64_t i);

template <FloatLoad Load>
void FloatRowDequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) y[i] = Load(src, i);
}

#if defined(__AVX512F__)
using FloatLoad16 = __m512 (*)(const uint8_t* src, int64_t i);

// kv/formats/codec_kernels.h decoder: 16 stored values per unit.
template <FloatLoad16 Load16>
struct FloatDecoder {
  static constexpr int kUnit = 16;
  static void Decode(const uint8_t* row, int64_t u, const CodecParams&, __m512* v) { v[0] = Load16(row, 16 * u); }
};
#endif

}  // namespace kvaudit
