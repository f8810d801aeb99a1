// Loading W elements as f32 in the kernels of matmul.cc / gemv.cc (internal to ops/). Every upcast
// is exact (bf16: a 16-bit shift; f16: vcvtph2ps or the bit-exact scalar F16ToF32), so a 16-bit W
// runs the arithmetic of the same W upcast to f32.
#pragma once

#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "base/half.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

// One W element of `row` (a w.row(r) pointer) as f32.
inline float WeightAt(QuantType t, const uint8_t* row, int64_t i) {
  switch (t) {
    case QuantType::kF32: return reinterpret_cast<const float*>(row)[i];
    case QuantType::kBF16: return BF16ToF32(reinterpret_cast<const uint16_t*>(row)[i]);
    case QuantType::kF16: return F16ToF32(reinterpret_cast<const uint16_t*>(row)[i]);
    default: KV_CHECK_MSG(false, "WeightAt: block types are dequantized per block (quant/dequantize.h)");
  }
  return 0;
}

// The SIMD loads (LoadW16, LoadW16Masked) are per kernel path: ops/weight_load_simd.inl.h.

}  // namespace kvaudit
