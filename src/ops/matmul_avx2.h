// The matmul kernel of the AVX2 + FMA + F16C kernel path (CPUs without the AVX-512 tiles);
// internal to ops/ (ops/matmul.cc's AVX2 pass calls it).
#pragma once

#include "base/simd.h"  // first: see the note on GCC bug 105593

#include <cstdint>

#include "ops/weight_matrix.h"

// Compiled in the AVX2 kernel path only (base/isa_passes.h).
namespace kvaudit::isa_avx2 {

// y[t · ldy + j] for t < n, j in [r0, r1): the canonical dots of ops/dot.h.
void MatMulRowsAvx2(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy);

// Decode over block-type rows: y[row0, row1) = W x, the same canonical dots (x [w.cols]).
void GemvBlockRowsAvx2(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y);

}  // namespace kvaudit::isa_avx2
