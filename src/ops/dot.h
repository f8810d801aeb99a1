// The canonical f32 dot product: the ONE reduction order every matmul output element and every
// attention score uses, whichever kernel, batch size or thread computes it (batch invariance: a
// token's logits must not depend on how many tokens share its forward call; docs/architecture.md).
//
// Order for Σ_i a_i·b_i over n elements: 16 lane accumulators, lane l = fma over i ≡ l (mod 16) in
// ascending i (acc_l = fma(a_i, b_i, acc_l), starting from +0); a tail of n mod 16 elements is
// zero-padded so it lands in the same lanes; then the fixed tree
//   b_i = a_i + a_{i+8} (i < 8), c_i = b_i + b_{i+4} (i < 4), d_i = c_i + c_{i+2} (i < 2), d_0 + d_1.
// The tree is written out (ReduceAdd16 / ReduceAdd16x16 below) rather than left to
// _mm512_reduce_add_ps, whose sequence is the compiler's to choose. The scalar twins emulate the
// same order with std::fma, so builds without AVX-512 are batch-invariant too.
#pragma once

#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "base/isa.h"

#include <cmath>
#include <cstdint>

namespace kvaudit {

// ReduceLanesRef (the tree over 16 lane values) and DotCanonicalScalar (the order written out with
// std::fma): here for baseline code, and again in every kernel pass (ops/dot_simd.inl.h), so a
// pass's twins inline their element loads and compile std::fma to the FMA instruction (a baseline
// template cannot inline a pass's lambda: GCC does not inline a callee with more ISA).
#include "ops/dot_scalar.inl.h"

// The canonical dot of f32 vectors (SIMD where available; bitwise DotCanonicalScalar).
float DotF32(const float* a, const float* b, int64_t n);
// out[j] = DotF32(a, rows + j·stride, n) for j < m, 16 rows at a time (one reduction for 16).
void DotRowsF32(const float* a, const float* rows, int64_t stride, int64_t m, int64_t n, float* out);
// Each kernel path's own, for kernels of the same path in other files (no dispatch per call).
KVAUDIT_DECLARE_PER_PATH(float DotF32(const float* a, const float* b, int64_t n);
                         void DotRowsF32(const float* a, const float* rows, int64_t stride, int64_t m, int64_t n,
                                         float* out);)

// The SIMD helpers of this order (ReduceAdd16, ReduceAdd16x16) are per kernel path: ops/dot_simd.inl.h.

}  // namespace kvaudit
