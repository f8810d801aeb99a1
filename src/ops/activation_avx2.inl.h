// The AVX2 path's activation kernels (ops/activation.cc), as an include with no guard and no
// includes: activation.cc includes it in the AVX2 pass, after activation_twins.inl.h (Exp1, the
// constants) and ops/dot_simd.inl.h (ReduceAdd16Avx2).
//
// Exp8 is Exp1 (= the AVX-512 path's Exp16) on 8 lanes, operation for operation. AVX2 has no
// vscalefps: where every lane's k is in (-126, 128) the power of two is built from its bits, as
// Exp1 does; a vector with any other lane (results subnormal, 0 or inf) takes Exp1 per lane.
inline __m256 Exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(kExpLo));  // a NaN x gives the bound, as Exp1's compare
  x = _mm256_min_ps(x, _mm256_set1_ps(kExpHi));
  const __m256 k =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i ki = _mm256_cvtps_epi32(k);  // exact: k is an integer in [-150, 128] (the clamps)
  const __m256i in_range =
      _mm256_and_si256(_mm256_cmpgt_epi32(ki, _mm256_set1_epi32(-126)), _mm256_cmpgt_epi32(_mm256_set1_epi32(128), ki));
  if (_mm256_movemask_ps(_mm256_castsi256_ps(in_range)) != 0xFF) {
    alignas(32) float v[8];
    _mm256_store_ps(v, x);  // clamped: Exp1 clamps again to the same value
    for (float& e : v) e = Exp1(e);
    return _mm256_load_ps(v);
  }
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP[i]));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256 two_k = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ki, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(p, two_k);
}

// The AVX-512 path's MaxOf on 16 lanes as two ymm (lanes 0-7, 8-15): per lane max(m, x) in
// ascending order, the tail lanes kept, then _mm512_reduce_max_ps's steps (GCC 12
// avx512fintrin.h: halves, then 128-bit halves, then {2,3,0,1}, then {1,0,1,0}) with its operand
// order, so signed zeros and NaNs come out as there.
inline float MaxOf16Lanes(const float* x, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 lo = ninf, hi = ninf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    lo = _mm256_max_ps(lo, _mm256_loadu_ps(x + i));
    hi = _mm256_max_ps(hi, _mm256_loadu_ps(x + i + 8));
  }
  if (i < n) {  // the lanes past n keep their value (the AVX-512 path's mask_max)
    alignas(32) float m[16];
    _mm256_store_ps(m, lo);
    _mm256_store_ps(m + 8, hi);
    for (int64_t l = 0; i + l < n; ++l) m[l] = _mm_cvtss_f32(_mm_max_ss(_mm_set_ss(m[l]), _mm_set_ss(x[i + l])));
    lo = _mm256_load_ps(m);
    hi = _mm256_load_ps(m + 8);
  }
  const __m256 t3 = _mm256_max_ps(hi, lo);
  const __m128 t6 = _mm_max_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
  const __m128 t8 = _mm_max_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m128 t10 = _mm_max_ps(t8, _mm_shuffle_ps(t8, t8, _MM_SHUFFLE(0, 1, 0, 1)));
  return _mm_cvtss_f32(t10);
}

// ExpSubSum on 16 lanes as two ymm: x_i = exp(x_i - m), lane i mod 16 sums its terms in ascending
// order, the canonical tree over the lanes (ExpSubSumTwin's order; the tail adds only real terms).
inline float ExpSubSum16Lanes(float* x, int64_t n, float mx) {
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 e0 = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    const __m256 e1 = Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
    _mm256_storeu_ps(x + i, e0);
    _mm256_storeu_ps(x + i + 8, e1);
    lo = _mm256_add_ps(lo, e0);
    hi = _mm256_add_ps(hi, e1);
  }
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, lo);
  _mm256_store_ps(lanes + 8, hi);
  for (int64_t l = 0; i + l < n; ++l) lanes[l] += (x[i + l] = Exp1(x[i + l] - mx));
  return ReduceLanesRef(lanes);
}
