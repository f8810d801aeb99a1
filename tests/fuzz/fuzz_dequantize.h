// Shared by the fuzz targets: dequantize every tensor a parser accepted, so that a parser that
// lets through a bad shape/byte count shows up as an ASan out-of-bounds read here.
#pragma once

#include <vector>

#include "io/dequantize.h"

namespace kvaudit {

inline void FuzzDequantizeAll(const std::vector<TensorView>& tensors) {
  std::vector<float> scratch;  // [numel] of the current tensor
  for (const TensorView& t : tensors) {
    if (!GetDTypeInfo(t.dtype).float_convertible) continue;
    // A valid tensor lies inside the input, so numel is bounded by the input size (at most
    // 32 elements per 17 bytes, mxfp4); this cap only guards against a parser bug turning into an OOM.
    if (t.numel() > (int64_t{1} << 26)) __builtin_trap();
    scratch.assign(static_cast<size_t>(t.numel()), 0.0f);
    if (!DequantizeToF32(t, scratch.data()).ok()) __builtin_trap();  // the parser vouched for it
    if (t.rows() > 0) {
      if (!DequantizeRowsToF32(t, t.rows() - 1, 1, scratch.data()).ok()) __builtin_trap();
    }
  }
}

}  // namespace kvaudit
