// QuantizeQ8RowX86Codes on the AVX2 and AVX-512 paths: llama.cpp's own AVX2 steps
// (ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/quants.c@de3ff815 quantize_row_q8_0, which
// AVX-512 builds compile too): max(|x|) in 8 lanes then halves, movehl, movehdup; id = 127/amax;
// _mm256_round_ps to nearest even, cvtps2dq, packs to int16 then int8, the lanes put back in order.
// The portable path takes the scalar twin (quant/q8_activation.cc), which computes each of these
// instructions' results; tests/unit/quant_q8_activation_test.cc compares them bit for bit.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"

#include <cstdint>

#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"

#define KVAUDIT_ISA_SELF "quant/q8_activation_simd.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
void QuantizeQ8RowX86Codes(const float* x, int64_t n, bool q8_1, ggml::BlockCodes out) {
  KVAUDIT_DISPATCH(QuantizeQ8RowX86Codes, x, n, q8_1, out);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)

#if defined(KVAUDIT_ISA_AVX2)
namespace {
// One block: its 32 codes stored, d = amax/127 returned (before the fp16 rounding).
float QuantizeBlock(const float* x, int8_t* codes) {
  __m256 v[4];  // [4] the block's 8-float vectors
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 max_abs = _mm256_andnot_ps(sign, v[0]);
  for (int i = 1; i < 4; ++i) max_abs = _mm256_max_ps(max_abs, _mm256_andnot_ps(sign, v[i]));
  __m128 max4 = _mm_max_ps(_mm256_extractf128_ps(max_abs, 1), _mm256_castps256_ps128(max_abs));
  max4 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
  max4 = _mm_max_ss(max4, _mm_movehdup_ps(max4));
  const float amax = _mm_cvtss_f32(max4);
  const __m256 mul = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
  __m256i q[4];  // [4] int32 codes
  for (int i = 0; i < 4; ++i)
    q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], mul), _MM_FROUND_TO_NEAREST_INT));
  // packs work within 128-bit halves: the permutation puts the 8 groups of 4 back in order.
  const __m256i q16a = _mm256_packs_epi32(q[0], q[1]), q16b = _mm256_packs_epi32(q[2], q[3]);
  const __m256i q8 =
      _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), q8);
  return amax / 127.f;
}
}  // namespace

void QuantizeQ8RowX86Codes(const float* x, int64_t n, bool q8_1, ggml::BlockCodes out) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b) {
    int8_t* codes = out.codes + b * ggml::kQK;
    const float d = QuantizeBlock(x + b * ggml::kQK, codes);
    uint8_t half[2];  // [2] an fp16, as the block stores it
    ggml::StoreF16(half, d);
    out.d[b] = ggml::LoadF16(half);
    if (!q8_1) continue;
    int sum = 0;
    for (int j = 0; j < ggml::kQK; ++j) sum += codes[j];
    ggml::StoreF16(half, static_cast<float>(sum) * d);  // s = fp16(sum*d)
    out.m[b] = ggml::LoadF16(half);
  }
}
#else
void QuantizeQ8RowX86Codes(const float* x, int64_t n, bool q8_1, ggml::BlockCodes out) {
  QuantizeQ8RowX86CodesScalar(x, n, q8_1, out);
}
#endif

#endif  // KVAUDIT_ISA_PASS
