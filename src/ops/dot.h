// The canonical f32 dot product: the ONE reduction order every matmul output element and every
// attention score uses, whichever kernel, batch size or thread computes it (issue 3's batch
// invariance: a token's logits must not depend on how many tokens share its forward call).
//
// Order for Σ_i a_i·b_i over n elements: 16 lane accumulators, lane l = fma over i ≡ l (mod 16) in
// ascending i (acc_l = fma(a_i, b_i, acc_l), starting from +0); a tail of n mod 16 elements is
// zero-padded so it lands in the same lanes; then the fixed tree
//   b_i = a_i + a_{i+8} (i < 8), c_i = b_i + b_{i+4} (i < 4), d_i = c_i + c_{i+2} (i < 2), d_0 + d_1.
// The tree is written out (ReduceAdd16 / ReduceAdd16x16 below) rather than left to
// _mm512_reduce_add_ps, whose sequence is the compiler's to choose. The scalar twins emulate the
// same order with std::fma, so builds without AVX-512 are batch-invariant too.
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "base/isa.h"

#include <cmath>
#include <cstdint>

namespace kvaudit {

// The tree over 16 lane values a[16].
inline float ReduceLanesRef(const float* a) {
  float b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i) b[i] = a[i] + a[i + 8];
  for (int i = 0; i < 4; ++i) c[i] = b[i] + b[i + 4];
  for (int i = 0; i < 2; ++i) d[i] = c[i] + c[i + 2];
  return d[0] + d[1];
}

// Scalar emulation of the canonical dot; b_at(i) gives b_i as f32 (exact upcasts only).
// (The full 16-element steps carry no tail test, so compilers vectorize them across the lanes.)
template <class BAt>
inline float DotCanonicalScalar(const float* a, BAt b_at, int64_t n) {
  float acc[16] = {};
  int64_t i0 = 0;
  for (; i0 + 16 <= n; i0 += 16) {
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(a[i0 + l], b_at(i0 + l), acc[l]);
  }
  if (i0 < n) {
    for (int l = 0; l < 16; ++l) {
      const int64_t i = i0 + l;
      acc[l] = i < n ? std::fma(a[i], b_at(i), acc[l]) : std::fma(0.0f, 0.0f, acc[l]);
    }
  }
  return ReduceLanesRef(acc);
}
inline float DotCanonicalScalar(const float* a, const float* b, int64_t n) {
  return DotCanonicalScalar(a, [b](int64_t i) { return b[i]; }, n);
}

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
