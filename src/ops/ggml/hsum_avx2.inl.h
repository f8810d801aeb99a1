// The AVX2 build's in-register sum of 8 f32 lanes, hsum_float_8
// (ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/quants.c@de3ff815): the 128-bit halves added
// (a[i + 4] + a[i]), then movehl and movehdup, ((a4 + a0) + (a6 + a2)) + ((a5 + a1) + (a7 + a3)):
// Hsum8's adds (ops/ggml/vec_dot.h), the same bits. One definition for the ggml kernel files
// (vec_dot.cc, kquant_vec_dot.cc). Per kernel path: no include guard and no
// includes; a kernel section includes it inside an AVX2 (or AVX-512) pass (base/isa_passes.h).
namespace {
inline float HSum8V(__m256 x) {
  __m128 res = _mm256_extractf128_ps(x, 1);
  res = _mm_add_ps(res, _mm256_castps256_ps128(x));
  res = _mm_add_ps(res, _mm_movehl_ps(res, res));
  res = _mm_add_ss(res, _mm_movehdup_ps(res));
  return _mm_cvtss_f32(res);
}
}  // namespace
