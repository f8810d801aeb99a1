// The lane operations the SIMD block dequantizers (quant/dequantize_simd.cc, quant/dequantize_k_simd.cc)
// are written in, for the kernel path being compiled (base/isa_passes.h): 16 int32/f32 lanes on
// AVX-512, 8 on AVX2. Each kernel is written once over `V` and walks 16-element groups in
// 16 / V::kLanes steps, so both ISAs run the same integer decode and the same f32 operations
// (one cvt, then the reference's mul / add / sub in its order), and are bitwise the scalar
// reference (quant/<format>.cc). Internal to quant and ops' matmul and gemv.
//
// Per kernel path: no include guard and no includes; a kernel section includes it inside its pass
// (after <cstring>, base/half.h and base/simd.h), and the including file has fp contraction off (as
// quant/dequantize.cc): GCC implements _mm*_mul_ps / _mm*_sub_ps as plain vector operators and, in C++
// (where -ffp-contract=fast is its default even with -std=c++20), fuses a mul followed by a sub
// into one FMA, which rounds once instead of twice. (For every format here the product d*sc*q is
// exact in f32, at most 11 + 6 + 5 significant bits, so the fused result happens to be the same
// bits; q6_K's (d*sc)*q can round but has no add to fuse. The pragma keeps "the reference's
// operations, in its order" literally true, and true for the next format.)
#undef KVAUDIT_BLOCK_DEQUANT_SIMD  // re-decided in every pass
#if defined(KVAUDIT_MATMUL_AVX512) || defined(KVAUDIT_MATMUL_AVX2)
#define KVAUDIT_BLOCK_DEQUANT_SIMD 1

namespace block_simd {

#if defined(KVAUDIT_MATMUL_AVX512)
struct V {
  static constexpr int kLanes = 16;
  using I = __m512i;
  using F = __m512;
  using Table = __m512;  // 16 f32 levels, indexed by a 4-bit code
  // kLanes bytes at p (any alignment), zero- / sign-extended to int32 lanes.
  static I U8(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I I8(const uint8_t* p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I Splat(int32_t v) { return _mm512_set1_epi32(v); }
  static I And(I a, I b) { return _mm512_and_si512(a, b); }
  static I Or(I a, I b) { return _mm512_or_si512(a, b); }
  static I Sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I Shr(I a, int n) { return _mm512_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static I Shl(I a, int n) { return _mm512_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  // q5_0/q5_1's fifth bits: Bits holds a block's u32 qh; OrBit16(a, qh, e0) = a | 16 in lane e where
  // bit e0 + e of qh is set (one masked op here).
  using Bits = uint32_t;
  static Bits LoadBits(uint32_t qh) { return qh; }
  static I OrBit16(I a, Bits qh, int e0) {
    return _mm512_mask_or_epi32(a, static_cast<__mmask16>(qh >> e0), a, Splat(16));
  }
  static F ToF(I a) { return _mm512_cvtepi32_ps(a); }
  static F SplatF(float v) { return _mm512_set1_ps(v); }
  static F BroadcastF(const float* p) { return _mm512_set1_ps(*p); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F AddF(F a, F b) { return _mm512_add_ps(a, b); }
  static F SubF(F a, F b) { return _mm512_sub_ps(a, b); }
  static void Store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static Table LoadTable(const float* levels) { return _mm512_loadu_ps(levels); }
  static F Lookup(const Table& t, I code) { return _mm512_permutexvar_ps(code, t); }  // code in 0..15
};
#else
struct V {
  static constexpr int kLanes = 8;
  using I = __m256i;
  using F = __m256;
  struct Table {
    __m256 lo, hi;
  };  // levels 0..7 and 8..15
  static I U8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I I8(const uint8_t* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I Splat(int32_t v) { return _mm256_set1_epi32(v); }
  static I And(I a, I b) { return _mm256_and_si256(a, b); }
  static I Or(I a, I b) { return _mm256_or_si256(a, b); }
  static I Sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I Shr(I a, int n) { return _mm256_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static I Shl(I a, int n) { return _mm256_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  using Bits = __m256i;  // qh in every lane; each lane shifts its own bit down (measured faster than a compare)
  static Bits LoadBits(uint32_t qh) { return Splat(static_cast<int32_t>(qh)); }
  static I OrBit16(I a, Bits qh, int e0) {
    const I lane = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), Splat(e0));
    return Or(a, Shl(And(_mm256_srlv_epi32(qh, lane), Splat(1)), 4));
  }
  static F ToF(I a) { return _mm256_cvtepi32_ps(a); }
  static F SplatF(float v) { return _mm256_set1_ps(v); }
  static F BroadcastF(const float* p) { return _mm256_broadcast_ss(p); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F AddF(F a, F b) { return _mm256_add_ps(a, b); }
  static F SubF(F a, F b) { return _mm256_sub_ps(a, b); }
  static void Store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static Table LoadTable(const float* levels) { return {_mm256_loadu_ps(levels), _mm256_loadu_ps(levels + 8)}; }
  static F Lookup(const Table& t, I code) {  // permutevar8x32 reads the low 3 bits; bit 3 picks the half
    const __m256 lo = _mm256_permutevar8x32_ps(t.lo, code), hi = _mm256_permutevar8x32_ps(t.hi, code);
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(code, 28)));
  }
};
#endif

// f16 -> f32 with the hardware conversion (F16C: exact for every finite value and inf), bitwise
// F16ToF32 (base/half.h); NaNs go to F16ToF32, which keeps a signaling NaN's payload as is where
// vcvtph2ps would quiet it. A branch per block scale, never per element.
inline float LoadScale(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  if ((h & 0x7C00u) == 0x7C00u) return F16ToF32(h);
  return _cvtsh_ss(h);
}

using ::kvaudit::ggml::LoadU32;
using ::kvaudit::ggml::ScaleMinK4Words;

// The eight (scale, min) pairs of q4_K/q5_K (ScaleMinK4Words, quant/ggml_blocks.h), as f32:
// dsc[p] = d * sc_p, dmn[p] = dmin * m_p.
inline void ScalesK4(const uint8_t* scales, float d, float dmin, float* dsc, float* dmn) {
  uint32_t sm[4];  // bytes: sc 0..7, then m 0..7
  ScaleMinK4Words(scales, sm);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sm));
  _mm256_storeu_ps(dsc, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes))));
  _mm256_storeu_ps(
      dmn, _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)))));
}

// kvalues_iq4nl (ggml-common.h) as f32, exactly the reference's static_cast<float>(level).
inline constexpr const float* kIq4NlLevelsF = ::kvaudit::ggml::kIq4NlValuesF.v;
// kvalues_mxfp4 (ggml-common.h) as f32, exactly the reference's static_cast<float>(level).
inline constexpr const float* kMxfp4LevelsF = ::kvaudit::ggml::kMxfp4ValuesF.v;

// The K-family SIMD twins (quant/dequantize_k_simd.cc): y [256 nb] from nb blocks at b.
void RowQ2_KSimd(const uint8_t* b, float* y, int64_t nb);
void RowQ3_KSimd(const uint8_t* b, float* y, int64_t nb);
void RowQ4_KSimd(const uint8_t* b, float* y, int64_t nb);
void RowQ5_KSimd(const uint8_t* b, float* y, int64_t nb);
void RowQ6_KSimd(const uint8_t* b, float* y, int64_t nb);
void RowIQ4_XSSimd(const uint8_t* b, float* y, int64_t nb);

}  // namespace block_simd

#endif  // KVAUDIT_MATMUL_AVX512 || KVAUDIT_MATMUL_AVX2
