// Loading 16 (AVX-512) or 8 (AVX2) W elements as f32, exact upcasts (the SIMD half of
// ops/weight_load.h), for the kernels of matmul.cc, matmul_avx2.cc and gemv.cc. Per kernel path: no include guard and
// no includes; a kernel section includes it inside its pass (base/isa_passes.h), after ops/weight_load.h.
#if defined(KVAUDIT_MATMUL_AVX512)  // base/isa_passes.h
// 16 consecutive weights from element i as f32.
template <QuantType T>
inline __m512 LoadW16(const uint8_t* row, int64_t i) {
  if constexpr (T == QuantType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + i));
    if constexpr (T == QuantType::kBF16)
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
      return _mm512_cvtph_ps(h);
  }
}
// The first popcount(m) of them, zeros in the other lanes.
template <QuantType T>
inline __m512 LoadW16Masked(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (T == QuantType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
    if constexpr (T == QuantType::kBF16)
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
      return _mm512_cvtph_ps(h);
  }
}
#elif defined(KVAUDIT_MATMUL_AVX2)
// 8 consecutive weights from element i as f32.
template <QuantType T>
inline __m256 LoadW8(const uint8_t* row, int64_t i) {
  if constexpr (T == QuantType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + i));
    if constexpr (T == QuantType::kBF16)
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    else
      return _mm256_cvtph_ps(h);
  }
}
#endif
