// E2M1 (quant/e2m1.h) codes to f32 in registers, for the fp4 KV formats' decoders
// (kv/formats/nvfp4.cc, fp4_mx_block16.cc): 8 bytes hold 16 codes, element 2k in the low nibble
// of byte k and 2k+1 in the high one. Exact: each lane is kE2M1Values[code]. No include guard
// and no includes: a format's kernel section includes it inside its pass (base/isa_passes.h)
// after "kv/formats/codec_kernels_simd.inl.h".
#if defined(KVAUDIT_ISA_AVX512)
// The 16 codes as 16 bytes in element order.
inline __m128i E2M1Codes16(const uint8_t* packed) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F)),
                hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
  return _mm_unpacklo_epi8(lo, hi);
}
inline __m512 E2M1Decode16(const uint8_t* packed) {
  return _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(E2M1Codes16(packed)), _mm512_loadu_ps(kE2M1Values));
}
#elif defined(KVAUDIT_ISA_AVX2)
// v[0], v[1] = the 16 values: the magnitude from the 8-entry table, the sign bit (code bit 3) or'ed in.
inline void E2M1Decode16(const uint8_t* packed, __m256* v) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F)),
                hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
  const __m128i codes = _mm_unpacklo_epi8(lo, hi);  // 16 codes in element order
  const __m256 mags = _mm256_loadu_ps(kE2M1Values);
  for (int h = 0; h < 2; ++h) {
    const __m256i c = _mm256_cvtepu8_epi32(h == 0 ? codes : _mm_unpackhi_epi64(codes, codes));
    const __m256 m = _mm256_permutevar8x32_ps(mags, _mm256_and_si256(c, _mm256_set1_epi32(7)));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(8)), 28);
    v[h] = _mm256_or_ps(m, _mm256_castsi256_ps(sign));
  }
}
#endif
