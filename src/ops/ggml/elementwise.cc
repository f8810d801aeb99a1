// ggml's row operations (elementwise.h). std::fma exactly where the AVX2 intrinsics fuse. SwiGlu is
// also compiled once per kernel path (base/isa_passes.h): vec.h's AVX2 ggml_v_expf and ggml_v_silu
// on the AVX2 and AVX-512 paths (the AVX2 build's, kEmulatedBuild), the scalar twin elsewhere.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "ops/ggml/elementwise.h"

#include <cmath>
#include <cstdint>

#include "base/half.h"

namespace kvaudit::ggml {

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0.0;  // ggml_float
    for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale * w[i];  // rms_norm, then mul (fused or not)
  }
}

// One lane of the AVX2 ggml_v_expf: z = fma(x, 1/ln2, 1.5·2^23) rounds x/ln2 to the integer n in
// z's low mantissa bits; b = x − n·ln2 in two steps; 2^n built in the exponent bits (k); the
// polynomial j; result fma(j, k, k), or for |n| > 126 the scaled forms that avoid overflow.
float VExpF(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const uint32_t e = FloatToBits(z) << 23;
  const float k = BitsToFloat(e + FloatToBits(1.0f));
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               0x1.ffffecp-1f * b);
  if (!(std::fabs(n) > 126)) return std::fma(j, k, k);
  const uint32_t g = n <= 0 ? 0x82000000u : 0u;
  const float s1 = BitsToFloat(g + 0x7f000000u);
  const float s2 = BitsToFloat(e - g);
  if (std::fabs(n) > 192) return s1 * s1;
  return std::fma(s2, j, s2) * s1;
}

namespace {
// ggml_vec_swiglu_f32's leftover elements: ggml_silu_f32 (libm expf), times up.
void SwiGluTail(const float* gate, const float* up, float* out, int64_t from, int64_t n) {
  for (int64_t i = from; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}
}  // namespace

void SwiGluScalar(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t whole = n / 8 * 8;  // the 8-lane loop of ggml_vec_swiglu_f32
  for (int64_t i = 0; i < whole; ++i) out[i] = gate[i] / (1.0f + VExpF(0.0f - gate[i])) * up[i];
  SwiGluTail(gate, up, out, whole, n);
}

}  // namespace kvaudit::ggml

#define KVAUDIT_ISA_SELF "ops/ggml/elementwise.cc"
#include "base/isa_passes.h"  // the kernel below, once per kernel path

namespace kvaudit::ggml {
void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  KVAUDIT_DISPATCH(ggml::SwiGlu, gate, up, out, n);
}
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twin; this path's kernel below hides the dispatcher

#if defined(KVAUDIT_ISA_AVX2)  // also the AVX-512 pass: the AVX2 build's vec.h
namespace {
// ggml_v_expf (ggml-org/llama.cpp:ggml/src/ggml-cpu/vec.h@de3ff815, its AVX2 branch): VExpF's steps
// in 8 lanes; where a lane has |n| > 126 the scaled forms are blended in (|n| > 192: s1·s1).
__m256 ExpV(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
  const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
  const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  const __m256 c = _mm256_cmp_ps(abs_n, _mm256_set1_ps(126), _CMP_GT_OQ);
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
  if (!_mm256_movemask_ps(c)) return _mm256_fmadd_ps(j, k, k);
  const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                     _mm256_set1_epi32(static_cast<int>(0x82000000u)));
  const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
  const __m256 d = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192), _CMP_GT_OQ);
  const __m256 scaled = _mm256_or_ps(_mm256_and_ps(c, _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1)),
                                     _mm256_andnot_ps(c, _mm256_fmadd_ps(k, j, k)));
  return _mm256_or_ps(_mm256_and_ps(d, _mm256_mul_ps(s1, s1)), _mm256_andnot_ps(d, scaled));
}
}  // namespace

// ggml_vec_swiglu_f32's AVX2 loop: ggml_v_silu(x) = x / (1 + ggml_v_expf(0 − x)), times up.
void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t whole = n / 8 * 8;
  for (int64_t i = 0; i < whole; i += 8) {
    const __m256 x = _mm256_loadu_ps(gate + i);
    const __m256 e = ExpV(_mm256_sub_ps(_mm256_setzero_ps(), x));
    const __m256 silu = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1), e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  SwiGluTail(gate, up, out, whole, n);
}
#else
void SwiGlu(const float* gate, const float* up, float* out, int64_t n) { SwiGluScalar(gate, up, out, n); }
#endif
}  // namespace ggml
#endif
