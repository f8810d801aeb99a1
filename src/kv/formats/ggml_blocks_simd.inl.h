// The AVX-512 and AVX2 pieces of llama.cpp's block decoders (layouts: quant/ggml_blocks.h), for the
// kernel sections of kv/formats/ggml_block_codecs.cc. No include guard and no
// includes: a format's pass section (base/isa_passes.h) includes it inside its pass namespace. The
// portable path runs the scalar twins (kv/formats/codec_kernels_simd.inl.h).
#if defined(KVAUDIT_ISA_AVX512)
// The pass's own `ggml` namespace (kvaudit::isa_avx512::ggml): its decoders' ggml:: names find these
// helpers and, through the using-directive, everything of kvaudit::ggml (kQK, LoadF16, LoadU32, ...).
namespace ggml {
using namespace ::kvaudit::ggml;

// Rounded() for a vector: the product stays a separate rounding before an add (no contraction).
inline __m512 RoundedV(__m512 p) {
  asm("" : "+v"(p));
  return p;
}

// fp16 scale -> broadcast f32 (exact, like LoadF16: F16C's vcvtph2ps, which the AVX-512 pass has).
inline __m512 BroadcastF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm512_set1_ps(_cvtsh_ss(h));
}
// 16 packed nibble bytes -> 16 int32 lanes holding the whole byte; lane j: low nibble = code j,
// bits 4..7 = code j+16.
inline __m512i LoadNibbleBytes(const uint8_t* qs) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
}

// The block decoder shared by the 18-byte "fp16 d + 16 nibble bytes" blocks whose value is
// d · lut[code] (q4_0: lut = code − 8; iq4_nl: the non-linear codebook), for kv/formats/codec_kernels.h:
// v[0..1] = the block's 32 values, each rounded exactly as the scalar dequantizer rounds it.
// vpermps indexes the 16-entry f32 table with each lane's low 4 bits, so the low nibble needs no mask.
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockIq4Nl) == 18, "NibbleLutDecode assumes 18-byte blocks");
// The table is scaled once per block (lut·d, the same products the dequantizer forms), so the 32
// values cost two lookups and one multiply.
inline void NibbleLutDecode(const uint8_t* blk, __m512 lut, __m512* v) {
  const __m512 scaled = _mm512_mul_ps(lut, BroadcastF16(blk));
  const __m512i bytes = LoadNibbleBytes(blk + 2);
  v[0] = _mm512_permutexvar_ps(bytes, scaled);
  v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), scaled);
}

// The 32 codes of a 5-bit block (q5_0, q5_1) looked up in a 32-entry f32 table t0 | t1: 5-bit
// index = nibble | (qh bit j) << 4 (vpermt2ps: index bit 4 picks the table half). v[0..1]: codes
// 0..15 and 16..31.
inline void FiveBitLookup(const uint8_t* qh_bytes, const uint8_t* qs, __m512 t0, __m512 t1, __m512* v) {
  const uint32_t qh = LoadU32(qh_bytes);
  const __m512i bytes = LoadNibbleBytes(qs);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i ilo = _mm512_and_si512(bytes, _mm512_set1_epi32(0x0f));
  __m512i ihi = _mm512_srli_epi32(bytes, 4);
  ilo = _mm512_mask_or_epi32(ilo, static_cast<__mmask16>(qh & 0xffffu), ilo, sixteen);
  ihi = _mm512_mask_or_epi32(ihi, static_cast<__mmask16>(qh >> 16), ihi, sixteen);
  v[0] = _mm512_permutex2var_ps(t0, ilo, t1);
  v[1] = _mm512_permutex2var_ps(t0, ihi, t1);
}

}  // namespace ggml
#endif  // KVAUDIT_ISA_AVX512

#if defined(KVAUDIT_ISA_AVX2) && !defined(KVAUDIT_ISA_AVX512)  // the AVX2 pass (the AVX-512 one defines both)
// The AVX2 pass's own `ggml` namespace, as above. The decoders write a 32-value block as 4 ymm:
// v[0..3] = values 0-7, 8-15, 16-23, 24-31.
namespace ggml {
using namespace ::kvaudit::ggml;

// Rounded() for a vector: the product stays a separate rounding before an add (no contraction).
inline __m256 RoundedV(__m256 p) {
  asm("" : "+x"(p));
  return p;
}

// fp16 scale -> broadcast f32 (exact: F16C's vcvtph2ps, as the AVX-512 pass converts it).
inline __m256 BroadcastF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm256_set1_ps(_cvtsh_ss(h));
}

// 16 signed / unsigned byte values -> v[0..1] = f32(values 0-7, 8-15) (exact).
inline void I8ToF32(__m128i b, __m256* v) {
  v[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  v[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(b, b)));
}
inline void U8ToF32(__m128i b, __m256* v) {
  v[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
  v[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(b, b)));
}

// A block's 32 codes as bytes (lo: codes 0-15, hi: 16-31) -> v[0..3] = the dequantizer's values:
// signed codes · d (q8_0, q5_0, the table lookups), or unsigned codes · d + m with two roundings
// (q4_1, q5_1: ggml-base has no FMA).
inline void SignedTimesScale(__m128i lo, __m128i hi, __m256 d, __m256* v) {
  I8ToF32(lo, v);
  I8ToF32(hi, v + 2);
  for (int k = 0; k < 4; ++k) v[k] = _mm256_mul_ps(v[k], d);
}
inline void UnsignedTimesScalePlusMin(__m128i lo, __m128i hi, __m256 d, __m256 m, __m256* v) {
  U8ToF32(lo, v);
  U8ToF32(hi, v + 2);
  for (int k = 0; k < 4; ++k) v[k] = _mm256_add_ps(RoundedV(_mm256_mul_ps(v[k], d)), m);
}

// The 16 packed nibble bytes of a block: lo = the low nibbles (codes 0-15), hi = the high nibbles
// (codes 16-31), one code per byte.
inline void SplitNibbles(const uint8_t* qs, __m128i* lo, __m128i* hi) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  *lo = _mm_and_si128(bytes, low4);
  *hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
}

// NibbleLutDecode on 8 lanes: value = d · lut[code] for the 18-byte "fp16 d + 16 nibble bytes"
// blocks (q4_0: lut = code − 8; iq4_nl: the non-linear codebook), the table as 16 int8 (pshufb
// looks each code up; every entry is exact in f32, so f32(lut[code]) · d is the dequantizer's product).
inline void NibbleLutDecode(const uint8_t* blk, __m128i lut, __m256* v) {
  __m128i lo, hi;
  SplitNibbles(blk + 2, &lo, &hi);
  SignedTimesScale(_mm_shuffle_epi8(lut, lo), _mm_shuffle_epi8(lut, hi), BroadcastF16(blk), v);
}

// Bit j of 16 bits -> byte j = 0x10 when set (the fifth code bit of q5_0 / q5_1).
inline __m128i FifthBits(uint32_t bits16) {
  const __m128i spread = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(bits16)),
                                          _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, bit), bit), _mm_set1_epi8(0x10));
}

// The 32 five-bit codes of a q5_0 / q5_1 block as bytes: code j = nibble | (qh bit j) << 4.
inline void FiveBitCodes(const uint8_t* qh_bytes, const uint8_t* qs, __m128i* lo, __m128i* hi) {
  const uint32_t qh = LoadU32(qh_bytes);
  SplitNibbles(qs, lo, hi);
  *lo = _mm_or_si128(*lo, FifthBits(qh & 0xffffu));
  *hi = _mm_or_si128(*hi, FifthBits(qh >> 16));
}

}  // namespace ggml
#endif  // KVAUDIT_ISA_AVX2
