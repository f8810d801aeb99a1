// The matmul kernel of builds with AVX2 + FMA + F16C but without the AVX-512 tiles (the `avx2`
// preset, -march=x86-64-v3); internal to ops/ (ops/matmul.cc dispatches to it).
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include <cstdint>

#include "ops/weight_matrix.h"

#if defined(KVAUDIT_MATMUL_AVX2)  // ops/simd.h
namespace kvaudit {

// y[t · ldy + j] for t < n, j in [r0, r1): the canonical dots of ops/dot.h.
void MatMulRowsAvx2(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy);

}  // namespace kvaudit
#endif
