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

#if defined(__AVX512F__)
inline __mmask16 TailMask16(int64_t left) { return static_cast<__mmask16>((1u << left) - 1); }

// The tree on one vector; lane 0 of each step holds the sums the scalar tree names.
inline float ReduceAdd16(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));  // + lanes i+8
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));  // + lanes i+4
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));        // + lanes i+2
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));        // + lane i+1
  return _mm512_cvtss_f32(v);
}

// The same tree on 16 vectors at once (a transpose interleaved with the adds: 15 adds instead of
// 64). Every lane performs exactly ReduceAdd16's additions on its vector; the result lane 4k + m
// holds the sum of a[4m + k] ("raw" order; ReduceAdd16x16 permutes it to lane j = sum of a[j]).
inline __m512 ReduceAdd16x16Raw(const __m512* a) {
  __m512 b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i) {  // 128-bit lanes {A0+A2, A1+A3, B0+B2, B1+B3}: a_i + a_{i+8}
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xEE));
  }
  for (int i = 0; i < 4; ++i) {  // {P0+P1, P2+P3, Q0+Q1, Q2+Q3}: b_i + b_{i+4}
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {  // per 128-bit lane {R0+R2, R1+R3, S0+S2, S1+S3}: c_i + c_{i+2}
    d[i] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0x44), _mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0xEE));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));  // d_0 + d_1
}
inline __m512 ReduceAdd16x16(const __m512* a) {
  const __m512i idx = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_ps(idx, ReduceAdd16x16Raw(a));
}
#endif

}  // namespace kvaudit
