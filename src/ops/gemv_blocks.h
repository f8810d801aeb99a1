// Decode gemv over block-type rows with the blocks decoded in registers (ops/gemv_blocks.cc).
// Internal to ops: ops/matmul.cc's gemv calls its own path's, per row range, without dispatching.
#pragma once

#include <cstdint>

#include "base/isa.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

// y[row0, row1) = rows [row0, row1) of block-type w times x [w.cols], bitwise the f32 gemv on
// the dequantized rows (ops/matmul.h's canonical order). False (nothing written) where this path
// has no in-register decoder for w.type; the caller then uses the scratch kernel.
KVAUDIT_DECLARE_PER_PATH(bool GemvBlockRowsDecoded(const float* x, const WeightView& w, int64_t row0, int64_t row1,
                                                   float* y);)

}  // namespace kvaudit
