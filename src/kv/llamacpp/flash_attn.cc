// llama.cpp CPU flash-attention primitives: see kv/llamacpp/flash_attn.h. The AVX-512 and AVX2
// V-accumulation kernels are compiled once per kernel path (base/isa_passes.h); the scalar twins and
// conversions are defined once. (The integer score dot is ops/ggml/vec_dot.h DotQ8Blocks.)
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/llamacpp/flash_attn.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "base/status.h"
#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"

namespace kvaudit::llamacpp {

void ExpandKRow(KvFormat k, const uint8_t* row, int hd, ggml::BlockCodes out) {
  KV_CHECK_MSG(IsLlamaCppBlockFormat(k) && hd % ggml::kQK == 0, "ExpandKRow: not a llama.cpp block format row");
  Format(k).ggml().to_codes(row, hd, out);
}

void ConvertQRow(KvFormat k, const float* q, int hd, ggml::BlockCodes out) {
  KV_CHECK(hd % ggml::kQK == 0);
  QuantizeQ8RowX86Codes(q, hd, UsesQ8_1(k), out);
}

void MadF32Scalar(float* acc, const float* v, float s, int hd) {
  for (int i = 0; i < hd; ++i) acc[i] = std::fma(v[i], s, acc[i]);
}
void MadRowsF32Scalar(float* acc, const float* v, const float* p, int kn, int hd) {
  for (int j = 0; j < kn; ++j) {
    if (p[j] != 0.0f) MadF32Scalar(acc, v + static_cast<int64_t>(j) * hd, p[j], hd);
  }
}
void ScaleF32Scalar(float* acc, float s, int hd) {
  for (int i = 0; i < hd; ++i) acc[i] *= s;
}
void MadF16Scalar(float* acc, const float* v, float s, int hd) {
  for (int i = 0; i < hd; ++i) acc[i] = F16ToF32(F32ToF16(std::fma(v[i], s, acc[i])));
}
void ScaleF16Scalar(float* acc, float s, int hd) {
  for (int i = 0; i < hd; ++i) acc[i] = F16ToF32(F32ToF16(acc[i] * s));
}

void RoundToF16(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = F16ToF32(F32ToF16(x[i]));
}
void RoundToBF16(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = BF16ToF32(F32ToBF16(x[i]));
}

}  // namespace kvaudit::llamacpp

#define KVAUDIT_ISA_SELF "kv/llamacpp/flash_attn.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::llamacpp {
void MadF32(float* acc, const float* v, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::MadF32, acc, v, s, hd); }
void MadRowsF32(float* acc, const float* v, const float* p, int kn, int hd) {
  KVAUDIT_DISPATCH(llamacpp::MadRowsF32, acc, v, p, kn, hd);
}
void ScaleF32(float* acc, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::ScaleF32, acc, s, hd); }
void MadF16(float* acc, const float* v, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::MadF16, acc, v, s, hd); }
void ScaleF16(float* acc, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::ScaleF16, acc, s, hd); }
}  // namespace kvaudit::llamacpp

#else  // one kernel path, in namespace kvaudit::isa_<path>::llamacpp (base/isa_passes.h)
namespace llamacpp {
using namespace ::kvaudit::llamacpp;  // the scalar twins; this path's kernels below hide the dispatchers

#if defined(KVAUDIT_ISA_AVX512)
void MadF32(float* acc, const float* v, float s, int hd) {
  if (hd % 16) return MadF32Scalar(acc, v, s, hd);
  const __m512 vs = _mm512_set1_ps(s);
  for (int i = 0; i < hd; i += 16)
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(_mm512_loadu_ps(v + i), vs, _mm512_loadu_ps(acc + i)));
}
void ScaleF32(float* acc, float s, int hd) {
  if (hd % 16) return ScaleF32Scalar(acc, s, hd);
  const __m512 vs = _mm512_set1_ps(s);
  for (int i = 0; i < hd; i += 16) _mm512_storeu_ps(acc + i, _mm512_mul_ps(_mm512_loadu_ps(acc + i), vs));
}
namespace {
inline __m512 RoundF16(__m512 x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }
}  // namespace
void MadF16(float* acc, const float* v, float s, int hd) {
  if (hd % 16) return MadF16Scalar(acc, v, s, hd);
  const __m512 vs = _mm512_set1_ps(s);
  for (int i = 0; i < hd; i += 16)
    _mm512_storeu_ps(acc + i, RoundF16(_mm512_fmadd_ps(_mm512_loadu_ps(v + i), vs, _mm512_loadu_ps(acc + i))));
}
void ScaleF16(float* acc, float s, int hd) {
  if (hd % 16) return ScaleF16Scalar(acc, s, hd);
  const __m512 vs = _mm512_set1_ps(s);
  for (int i = 0; i < hd; i += 16) _mm512_storeu_ps(acc + i, RoundF16(_mm512_mul_ps(_mm512_loadu_ps(acc + i), vs)));
}
#elif defined(KVAUDIT_ISA_AVX2)  // the same element-wise steps, 8 lanes
void MadF32(float* acc, const float* v, float s, int hd) {
  if (hd % 8) return MadF32Scalar(acc, v, s, hd);
  const __m256 vs = _mm256_set1_ps(s);
  for (int i = 0; i < hd; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(_mm256_loadu_ps(v + i), vs, _mm256_loadu_ps(acc + i)));
}
void ScaleF32(float* acc, float s, int hd) {
  if (hd % 8) return ScaleF32Scalar(acc, s, hd);
  const __m256 vs = _mm256_set1_ps(s);
  for (int i = 0; i < hd; i += 8) _mm256_storeu_ps(acc + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), vs));
}
namespace {
inline __m256 RoundF16(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }
}  // namespace
void MadF16(float* acc, const float* v, float s, int hd) {
  if (hd % 8) return MadF16Scalar(acc, v, s, hd);
  const __m256 vs = _mm256_set1_ps(s);
  for (int i = 0; i < hd; i += 8)
    _mm256_storeu_ps(acc + i, RoundF16(_mm256_fmadd_ps(_mm256_loadu_ps(v + i), vs, _mm256_loadu_ps(acc + i))));
}
void ScaleF16(float* acc, float s, int hd) {
  if (hd % 8) return ScaleF16Scalar(acc, s, hd);
  const __m256 vs = _mm256_set1_ps(s);
  for (int i = 0; i < hd; i += 8) _mm256_storeu_ps(acc + i, RoundF16(_mm256_mul_ps(_mm256_loadu_ps(acc + i), vs)));
}
#else
void MadF32(float* acc, const float* v, float s, int hd) { MadF32Scalar(acc, v, s, hd); }
void ScaleF32(float* acc, float s, int hd) { ScaleF32Scalar(acc, s, hd); }
void MadF16(float* acc, const float* v, float s, int hd) { MadF16Scalar(acc, v, s, hd); }
void ScaleF16(float* acc, float s, int hd) { ScaleF16Scalar(acc, s, hd); }
#endif

#if defined(KVAUDIT_ISA_AVX2)  // also the AVX-512 pass: 64 columns (8 registers) at a time
void MadRowsF32(float* acc, const float* v, const float* p, int kn, int hd) {
  if (hd % 64) return MadRowsF32Scalar(acc, v, p, kn, hd);
  for (int c = 0; c < hd; c += 64) {
    __m256 a[8];  // acc [c, c + 64)
    for (int i = 0; i < 8; ++i) a[i] = _mm256_loadu_ps(acc + c + 8 * i);
    for (int j = 0; j < kn; ++j) {
      if (p[j] == 0.0f) continue;
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float* vj = v + static_cast<int64_t>(j) * hd + c;
      for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(vj + 8 * i), pj, a[i]);
    }
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(acc + c + 8 * i, a[i]);
  }
}
#else
void MadRowsF32(float* acc, const float* v, const float* p, int kn, int hd) { MadRowsF32Scalar(acc, v, p, kn, hd); }
#endif

}  // namespace llamacpp
#endif  // KVAUDIT_ISA_PASS
