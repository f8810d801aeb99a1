// llama.cpp CPU flash-attention primitives: see kv/llamacpp/flash_attn.h. ScoreQ8 (llama.cpp's
// AVX2 branch, on the AVX2 and AVX-512 paths) and the AVX-512 V-accumulation kernels are compiled
// once per kernel path (base/isa_passes.h); the scalar twins and conversions are defined once.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/llamacpp/flash_attn.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "base/status.h"
#include "quant/ggml_blocks.h"
#include "kv/formats/q8_activation.h"

namespace kvaudit::llamacpp {

void ExpandKRow(KvFormat k, const uint8_t* row, int hd, ggml::BlockCodes out) {
  KV_CHECK_MSG(IsLlamaCppBlockFormat(k) && hd % ggml::kQK == 0, "ExpandKRow: not a llama.cpp block format row");
  Format(k).ggml().to_codes(row, hd, out);
}

void ConvertQRow(KvFormat k, const float* q, int hd, ggml::BlockCodes out) {
  KV_CHECK(hd % ggml::kQK == 0 && hd <= 1024);
  const int nb = hd / ggml::kQK;
  uint8_t buf[36 * 32];  // [nb blocks of q8_0 (34 B) or q8_1 (36 B)]
  const bool q81 = UsesQ8_1(k);
  if (q81)
    QuantizeQ8_1RowX86(q, buf, hd);
  else
    QuantizeQ8_0RowX86(q, buf, hd);
  const int bytes = q81 ? 36 : 34, off = q81 ? 4 : 2;
  for (int b = 0; b < nb; ++b) {
    out.d[b] = ggml::LoadF16(buf + b * bytes);
    if (q81) out.m[b] = ggml::LoadF16(buf + b * bytes + 2);  // s = fp16(d·Σq)
    std::memcpy(out.codes + b * ggml::kQK, buf + b * bytes + off, 32);
  }
}

namespace {
// hsum_float_8 (ggml-cpu/arch/x86/quants.c): (x0+x4 + x2+x6) + (x1+x5 + x3+x7), in that order.
inline float HSum8(const float* x) {
  float r0 = x[0] + x[4], r1 = x[1] + x[5];
  const float r2 = x[2] + x[6], r3 = x[3] + x[7];
  r0 = r0 + r2;
  r1 = r1 + r3;
  return r0 + r1;
}
}  // namespace

float ScoreQ8Scalar(ggml::VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                    const float* qd, const float* qm, int nb) {
  float acc[2][8] = {};  // [accumulator (iq4_nl: even/odd block)][lane]
  float summs = 0.0f, tail = 0.0f;
  bool has_tail = false;
  for (int b = 0; b < nb; ++b) {
    float lane[8];  // mul_sum_i8_pairs_float: 4 consecutive products per int32 lane
    for (int i = 0; i < 8; ++i) {
      int s = 0;
      for (int e = 0; e < 4; ++e) s += kc[b * 32 + 4 * i + e] * qc[b * 32 + 4 * i + e];
      lane[i] = static_cast<float>(s);
    }
    const float d = kd[b] * qd[b];
    if (kind == ggml::VecDotKind::kIq4Nl && (nb % 2 == 1) && b == nb - 1) {  // odd last block: scalar tail
      float s = 0.0f;
      for (int i = 0; i < 8; ++i) s += lane[i];  // exact (integers)
      tail = d * s;
      has_tail = true;
      continue;
    }
    float* a = acc[kind == ggml::VecDotKind::kIq4Nl ? (b & 1) : 0];
    for (int i = 0; i < 8; ++i) a[i] = std::fma(d, lane[i], a[i]);
    if (kind == ggml::VecDotKind::kAffine) summs = std::fma(km[b], qm[b], summs);
  }
  if (kind == ggml::VecDotKind::kIq4Nl) {
    for (int i = 0; i < 8; ++i) acc[0][i] = acc[0][i] + acc[1][i];
  }
  float r = HSum8(acc[0]);
  if (kind == ggml::VecDotKind::kAffine) r = r + summs;
  if (has_tail) r = r + tail;
  return r;
}

float DotF16Emu(const float* a, const float* b, int n) {
  float sum[4][16] = {};  // GGML_F16_ARR accumulators × 16 lanes
  const int np = n & ~63;
  for (int i = 0; i < np; i += 64)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 16; ++l) sum[j][l] = std::fma(a[i + 16 * j + l], b[i + 16 * j + l], sum[j][l]);
  float x[16];
  for (int l = 0; l < 16; ++l) x[l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
  // _mm512_reduce_add_ps: halves 256, 128, 64, 32.
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) x[l] = x[l] + x[l + w];
  double r = x[0];
  for (int i = np; i < n; ++i) r += static_cast<double>(a[i] * b[i]);
  return static_cast<float>(r);
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
float ScoreQ8(ggml::VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
              const float* qd, const float* qm, int nb) {
  KVAUDIT_DISPATCH(llamacpp::ScoreQ8, kind, kc, kd, km, qc, qd, qm, nb);
}
void MadF32(float* acc, const float* v, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::MadF32, acc, v, s, hd); }
void ScaleF32(float* acc, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::ScaleF32, acc, s, hd); }
void MadF16(float* acc, const float* v, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::MadF16, acc, v, s, hd); }
void ScaleF16(float* acc, float s, int hd) { KVAUDIT_DISPATCH(llamacpp::ScaleF16, acc, s, hd); }
}  // namespace kvaudit::llamacpp

#else  // one kernel path, in namespace kvaudit::isa_<path>::llamacpp (base/isa_passes.h)
namespace llamacpp {
using namespace ::kvaudit::llamacpp;  // the scalar twins; this path's kernels below hide the dispatchers

#if defined(KVAUDIT_ISA_AVX2)  // also the AVX-512 pass: llama.cpp's AVX2 branch
namespace {
inline __m256 LanesF(const int8_t* x, const int8_t* y) {
  const __m256i vx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
  const __m256i vy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y));
  const __m256i dot = _mm256_maddubs_epi16(_mm256_sign_epi8(vx, vx), _mm256_sign_epi8(vy, vx));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(dot, _mm256_set1_epi16(1)));
}
inline float HSum8V(__m256 x) {
  __m128 res = _mm256_extractf128_ps(x, 1);
  res = _mm_add_ps(res, _mm256_castps256_ps128(x));
  res = _mm_add_ps(res, _mm_movehl_ps(res, res));
  res = _mm_add_ss(res, _mm_movehdup_ps(res));
  return _mm_cvtss_f32(res);
}
}  // namespace

float ScoreQ8(ggml::VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
              const float* qd, const float* qm, int nb) {
  if (kind == ggml::VecDotKind::kIq4Nl && nb % 2 == 1) return ScoreQ8Scalar(kind, kc, kd, km, qc, qd, qm, nb);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const __m256 l = LanesF(kc + b * 32, qc + b * 32);
    const __m256 d = _mm256_set1_ps(kd[b] * qd[b]);
    if (kind == ggml::VecDotKind::kIq4Nl && (b & 1))
      acc1 = _mm256_fmadd_ps(d, l, acc1);
    else
      acc0 = _mm256_fmadd_ps(d, l, acc0);
    if (kind == ggml::VecDotKind::kAffine) summs = std::fma(km[b], qm[b], summs);
  }
  if (kind == ggml::VecDotKind::kIq4Nl) acc0 = _mm256_add_ps(acc0, acc1);
  float r = HSum8V(acc0);
  if (kind == ggml::VecDotKind::kAffine) r = r + summs;
  return r;
}
#else
float ScoreQ8(ggml::VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
              const float* qd, const float* qm, int nb) {
  return ScoreQ8Scalar(kind, kc, kd, km, qc, qd, qm, nb);
}
#endif

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
