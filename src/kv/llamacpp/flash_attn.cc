// llama.cpp CPU flash-attention primitives: see kv/llamacpp/flash_attn.h. The AVX-512
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
#else
void MadF32(float* acc, const float* v, float s, int hd) { MadF32Scalar(acc, v, s, hd); }
void ScaleF32(float* acc, float s, int hd) { ScaleF32Scalar(acc, s, hd); }
void MadF16(float* acc, const float* v, float s, int hd) { MadF16Scalar(acc, v, s, hd); }
void ScaleF16(float* acc, float s, int hd) { ScaleF16Scalar(acc, s, hd); }
#endif

}  // namespace llamacpp
#endif  // KVAUDIT_ISA_PASS
