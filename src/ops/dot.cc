// The canonical dot (order in ops/dot.h) for f32 vectors: attention scores use it, so a score is
// the same bits in prefill and decode.
#ifndef KVAUDIT_ISA_PASS
#include "ops/dot.h"

#define KVAUDIT_ISA_SELF "ops/dot.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
float DotF32(const float* a, const float* b, int64_t n) { KVAUDIT_DISPATCH(DotF32, a, b, n); }
void DotRowsF32(const float* a, const float* rows, int64_t stride, int64_t m, int64_t n, float* out) {
  KVAUDIT_DISPATCH(DotRowsF32, a, rows, stride, m, n, out);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"

#if defined(KVAUDIT_ISA_AVX512)
float DotF32(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    const __mmask16 m = TailMask16(n - i);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return ReduceAdd16(acc);
}

void DotRowsF32(const float* a, const float* rows, int64_t stride, int64_t m, int64_t n, float* out) {
  const __m512i natural = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  int64_t j0 = 0;
  for (; j0 + 16 <= m; j0 += 16) {
    // 16 rows' accumulators; `a` is reloaded per row block from L1 (head_dim is small).
    __m512 acc[16];
    for (__m512& x : acc) x = _mm512_setzero_ps();
    const float* r = rows + j0 * stride;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m512 av = _mm512_loadu_ps(a + i);
      for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(av, _mm512_loadu_ps(r + j * stride + i), acc[j]);
    }
    if (i < n) {
      const __mmask16 mk = TailMask16(n - i);
      const __m512 av = _mm512_maskz_loadu_ps(mk, a + i);
      for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(mk, r + j * stride + i), acc[j]);
    }
    _mm512_storeu_ps(out + j0, _mm512_permutexvar_ps(natural, ReduceAdd16x16Raw(acc)));
  }
  for (; j0 < m; ++j0) out[j0] = DotF32(a, rows + j0 * stride, n);
}
#elif defined(KVAUDIT_ISA_AVX2)
// The 16 lanes as two ymm (lanes 0-7, 8-15); the tail zero-padded like the scalar order's.
float DotF32(const float* a, const float* b, int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), hi);
  }
  if (i < n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i - 8)), lane);
    lo = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m0), _mm256_maskload_ps(b + i, m0), lo);
    hi = _mm256_fmadd_ps(_mm256_maskload_ps(a + i + 8, m1), _mm256_maskload_ps(b + i + 8, m1), hi);
  }
  return ReduceAdd16Avx2(lo, hi);
}
// 4 rows at a time: each row's 16 lanes as DotF32 accumulates them, then the 4 rows' reductions
// side by side in ReduceAdd16Avx2's tree (b = lo + hi, c_i = b_i + b_{i+4}, d_i = c_i + c_{i+2},
// d_0 + d_1), one store of 4 results: the same additions per row, so DotF32's bits.
void DotRowsF32(const float* a, const float* rows, int64_t stride, int64_t m, int64_t n, float* out) {
  const int64_t full = n / 16 * 16;
  int64_t j = 0;
  for (; j + 4 <= m && full == n; j += 4) {
    __m256 lo[4], hi[4];  // [row] lanes 0-7 and 8-15
    for (int r = 0; r < 4; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    const float* b = rows + j * stride;
    for (int64_t i = 0; i < n; i += 16) {
      const __m256 a0 = _mm256_loadu_ps(a + i), a1 = _mm256_loadu_ps(a + i + 8);
      for (int r = 0; r < 4; ++r) {
        lo[r] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + r * stride + i), lo[r]);
        hi[r] = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b + r * stride + i + 8), hi[r]);
      }
    }
    __m128 c[4];  // [row] c_i = b_i + b_{i+4}
    for (int r = 0; r < 4; ++r) {
      const __m256 bsum = _mm256_add_ps(lo[r], hi[r]);
      c[r] = _mm_add_ps(_mm256_castps256_ps128(bsum), _mm256_extractf128_ps(bsum, 1));
    }
    // [d0, d0', d1, d1'] of rows (0, 1) and (2, 3): d_i = c_i + c_{i+2}
    const __m128 d01 = _mm_add_ps(_mm_unpacklo_ps(c[0], c[1]), _mm_unpackhi_ps(c[0], c[1]));
    const __m128 d23 = _mm_add_ps(_mm_unpacklo_ps(c[2], c[3]), _mm_unpackhi_ps(c[2], c[3]));
    _mm_storeu_ps(out + j, _mm_add_ps(_mm_movelh_ps(d01, d23), _mm_movehl_ps(d23, d01)));  // d_0 + d_1 per row
  }
  for (; j < m; ++j) out[j] = DotF32(a, rows + j * stride, n);
}
#else
float DotF32(const float* a, const float* b, int64_t n) { return DotCanonicalScalar(a, b, n); }
void DotRowsF32(const float* a, const float* rows, int64_t stride, int64_t m, int64_t n, float* out) {
  for (int64_t j = 0; j < m; ++j) out[j] = DotCanonicalScalar(a, rows + j * stride, n);
}
#endif

#endif  // KVAUDIT_ISA_PASS
