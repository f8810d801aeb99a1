// A group's d and dmin for the q4_K kernels of one AVX2 (or AVX-512) pass: one definition for
// q4_k_repack.cc (Q4KGroupRows) and q4_k_lanes.cc (PackQ4KLanes). Per kernel path: no include guard
// and no includes; a kernel section includes it inside the pass (base/isa_passes.h), where
// kvaudit::ggml's BlockQ4_K and LoadU32 are visible.
namespace {
// d_w and dmin_w of super-block b of the 8 rows (lanes past count: 0) as f32: the first word of a
// block_q4_K is d | dmin << 16; fp16 -> f32 by F16C (exact).
inline void RowScales(const uint8_t* const rows[8], int count, int64_t b, __m256* d, __m256* dmin) {
  const auto word = [&](int l) { return l < count ? static_cast<int>(LoadU32(rows[l] + b * sizeof(BlockQ4_K))) : 0; };
  const __m256i dd = _mm256_setr_epi32(word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7));
  const auto halves = [](__m256i v) {  // 8 lanes of 16 bits -> one xmm of 8 fp16
    return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  };
  *d = _mm256_cvtph_ps(halves(_mm256_and_si256(dd, _mm256_set1_epi32(0xFFFF))));
  *dmin = _mm256_cvtph_ps(halves(_mm256_srli_epi32(dd, 16)));
}
}  // namespace
