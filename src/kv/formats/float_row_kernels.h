// Pieces shared by the float row codecs (f32, f16, bf16): they differ only in how stored values
// become floats (Load: one value; Load16: 16 values into a zmm, exact in every case). Their
// dot/axpy kernels come from kv/formats/codec_kernels.h with FloatDecoder, which is per kernel path
// (kv/formats/float_row_kernels_simd.inl.h); the scalar twins here are defined once.
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

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

// The float formats' scalar twins read each stored value in place: RowKernelsRef's operations on
// the same values (so the same bits) without a row buffer, hence no bound on n.
template <FloatLoad Load>
struct FloatRowKernelsRef : RowKernelsRefRows<FloatRowKernelsRef<Load>> {
  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams&) {
    return DotCanonicalScalar(q, [src](int64_t i) { return Load(src, i); }, n);
  }
  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
    for (int64_t i = 0; i < n; ++i) acc[i] = std::fma(Load(src, i), w, acc[i]);
  }
};

}  // namespace kvaudit
