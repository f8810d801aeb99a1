// The canonical dot's reduction tree (ops/dot.h) on AVX-512 registers and on AVX2 register pairs, for the
// kernels of each kernel path (base/isa_passes.h). No include guard, and only other per-pass includes: a kernel section
// includes it inside its pass namespace, after "ops/dot.h".
#include "ops/dot_scalar.inl.h"  // this pass's own copy of the scalar order

#if defined(KVAUDIT_ISA_AVX512)
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
    d[i] =
        _mm512_add_ps(_mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0x44), _mm512_shuffle_ps(c[2 * i], c[2 * i + 1], 0xEE));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));  // d_0 + d_1
}
inline __m512 ReduceAdd16x16(const __m512* a) {
  const __m512i idx = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_ps(idx, ReduceAdd16x16Raw(a));
}
#endif

#if defined(KVAUDIT_ISA_AVX2)
// The tree over lanes lo (0-7) and hi (8-15): ReduceLanesRef's additions, in its order.
inline float ReduceAdd16Avx2(__m256 lo, __m256 hi) {
  const __m256 b = _mm256_add_ps(lo, hi);                                               // a_i + a_{i+8}
  const __m128 c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));  // b_i + b_{i+4}
  const __m128 d = _mm_add_ps(c, _mm_movehl_ps(c, c));                                  // c_i + c_{i+2}
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));                              // d_0 + d_1
}
#endif
