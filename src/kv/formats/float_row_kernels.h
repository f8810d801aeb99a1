// Pieces shared by the float row codecs (f32, f16, bf16): they differ only in how stored values
// become floats (Load: one value; Load16: 16 values into a zmm, exact in every case). Their
// dot/axpy kernels come from kv/formats/codec_kernels.h with FloatDecoder, which is per kernel path
// (kv/formats/float_row_kernels_simd.inl.h); the scalar twins here are defined once.
#pragma once

#include "base/simd.h"  // first: see the note on GCC bug 105593

#include <cmath>
#include <cstdint>

#include "kv/formats/codec_kernels.h"
#include "kv/formats/row_codec.h"
#include "ops/dot.h"

namespace kvaudit {

using FloatLoad = float (*)(const uint8_t* src, int64_t i);

template <FloatLoad Load>
void FloatRowDequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
  for (int64_t i = 0; i < n; ++i) y[i] = Load(src, i);
}

// The in-place scalar twins (FloatRowKernelsRef): here once, and again in the AVX2 pass
// (float_row_kernels_simd.inl.h) for hardware FMA, as codec_kernels_ref.inl.h.
#include "kv/formats/float_row_kernels_ref.inl.h"

}  // namespace kvaudit
