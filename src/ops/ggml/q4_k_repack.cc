// Emulation of llama.cpp's repacked q4_K product on x86; the dispatch and the per-output order are
// in the header. The sub-block dots (integers, Q4KSubBlockDots) and the f32 steps of a group of 8
// weight rows (Q4KAccumulate8, the rows in the lanes as the kernels hold them) are SIMD kernels of
// each kernel path (base/isa_passes.h) with scalar twins; the pair sums between them are scalar
// integers. Sources:
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/repack.cpp@de3ff815 (forward_mul_mat, make_block_q4_Kx8)
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/repack.cpp@de3ff815 (ggml_quantize_mat_q8_K_4x8,
//     ggml_gemm_q4_K_8x8_q8_K, ggml_gemv_q4_K_8x8_q8_K)
//   ggml-org/llama.cpp:ggml/src/ggml-quants.c@de3ff815 (quantize_row_q8_K_ref, nearest_int)
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "ops/ggml/q4_k_repack.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/status.h"
#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"
#include "quant/quant_type.h"

namespace kvaudit::ggml {
namespace {

constexpr int kSub = 32;             // elements per sub-block (one 6-bit scale and min each)
constexpr int kSubs = kQK_K / kSub;  // 8 sub-blocks per super-block
constexpr int kPairs = kSubs / 2;    // the gemm's `sb` loop: two sub-blocks per step
constexpr int kGemmRowGroup = 4;     // forward_mul_mat quantizes and multiplies rows by 4
constexpr int kInterleavedRows = 8;  // block_q4_Kx8: the repack needs rows % 8 == 0

// Why plain int32 sums give the kernels' integers: the kernels form nibble (0..15, unsigned) times
// code (int8) pairs with maddubs (saturating to int16: |2·15·128| = 3840, never reached) and add 8
// of them per int16 lane with wrapping add_epi16 (16 products: |16·15·128| = 30720 < 32768, never
// wraps), then madd with the 6-bit scale into int32 lanes. So no lane saturates or wraps, for any
// code in [-128, 127], and each lane holds the exact value; only the order of the f32 steps matters.
static_assert(16 * 15 * 128 < 32768, "an int16 lane of the q4_K kernels cannot wrap");

// q4_K super-block of one weight row as the kernels read it from block_q4_Kx8: make_block_q4_Kx8
// keeps each row's d, dmin, nibbles and 6-bit scale/min pairs (re-encoded per sub-block index, and
// decoded back by the kernels' kmask shuffle), so the values are get_scale_min_k4's. The nibbles
// stay in the row as stored (Q4KSubBlockDots reads them there).
struct Q4KRow {
  std::vector<float> d, dmin;  // [nb] fp16 -> f32 (exact; F16C in the kernels)
  std::vector<int32_t> sc, m;  // [nb * 8] scale and min of each sub-block
};

void UnpackQ4KRow(const uint8_t* row, int64_t nb, Q4KRow* w) {
  w->d.resize(nb);
  w->dmin.resize(nb);
  w->sc.resize(nb * kSubs);
  w->m.resize(nb * kSubs);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * sizeof(BlockQ4_K);  // {f16 d, f16 dmin, scales[12], qs[128]}
    w->d[b] = LoadF16(blk + offsetof(BlockQ4_K, d));
    w->dmin[b] = LoadF16(blk + offsetof(BlockQ4_K, dmin));
    const uint8_t* scales = blk + offsetof(BlockQ4_K, scales);  // [12]
    for (int j = 0; j < kSubs; ++j) ScaleMinK4(j, scales, &w->sc[b * kSubs + j], &w->m[b * kSubs + j]);
  }
}

// _mm256_round_ps(v, _MM_ROUND_NEAREST) (imm 0: round half to even whatever MXCSR says), then
// _mm256_cvtps_epi32 (exact for an integral value; NaN / out of range give INT32_MIN), then
// _mm256_packs_epi32 and _mm256_packs_epi16 (int32 -> int16 -> int8, each saturating: together a
// clamp to [-128, 127]).
int8_t RoundPackI8(float v) {
  float r = v;
  if (std::fabs(v) < 8388608.f) {  // below 2^23 a float may have a fraction; trunc and v - t are exact
    const float t = std::trunc(v);
    const float frac = std::fabs(v - t);
    const bool odd = (static_cast<int32_t>(t) & 1) != 0;  // |t| < 2^23: the conversion is exact
    r = (frac > 0.5f || (frac == 0.5f && odd)) ? t + std::copysign(1.0f, v) : t;
  }
  const int32_t i = (r >= -2147483648.f && r < 2147483648.f) ? static_cast<int32_t>(r) : INT32_MIN;
  return static_cast<int8_t>(std::clamp<int32_t>(i, -128, 127));
}

void ResizeRow(int64_t k, Q8KActivationRow* a) {
  a->d.assign(k / kQK_K, 0.0f);
  a->qs.assign(k, 0);
  a->sub_sums.assign(k / kSub, 0);
}

// Σ of each sub-block's codes: the kernels' bsums (int16 sums of 16 codes, maddubs with ones or
// the reference's loop) added in pairs by _mm_hadd_epi16; |Σ| <= 32·128 stays exact in int16.
void SubBlockSums(Q8KActivationRow* a) {
  for (size_t s = 0; s < a->sub_sums.size(); ++s) {
    int32_t sum = 0;
    for (int l = 0; l < kSub; ++l) sum += a->qs[s * kSub + l];
    a->sub_sums[s] = sum;
  }
}

}  // namespace

void Q4KSubBlockDotsScalar(const uint8_t* row, const int8_t* q, int64_t nb, int32_t* dots) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qs = row + b * sizeof(BlockQ4_K) + offsetof(BlockQ4_K, qs);  // [128]
    // qs byte 32c + l: low nibble = element 64c + l (sub-block 2c), high = 64c + 32 + l (2c + 1).
    for (int s = 0; s < kSubs; ++s) {
      const int8_t* qq = q + b * kQK_K + s * kSub;  // [32]
      int32_t dot = 0;
      for (int l = 0; l < kSub; ++l) dot += ((qs[kSub * (s / 2) + l] >> (4 * (s % 2))) & 0x0f) * int32_t{qq[l]};
      dots[b * kSubs + s] = dot;
    }
  }
}

void Q4KPairSumsScalar(const uint8_t* row, const int32_t* sc, const int32_t* m, const int8_t* q,
                       const int32_t* sub_sums, int64_t nb, int steps, int32_t* isum, int32_t* imin) {
  std::vector<int32_t> dots(nb * kSubs);  // [nb · 8] the row's sub-block dots
  Q4KSubBlockDotsScalar(row, q, nb, dots.data());
  const int per_step = kSubs / steps;  // sub-blocks summed per step: 2 (gemm) or 8 (gemv)
  for (int64_t b = 0; b < nb; ++b) {
    for (int p = 0; p < steps; ++p) {
      int32_t si = 0, sm = 0;
      for (int64_t j = b * kSubs + per_step * p; j < b * kSubs + per_step * (p + 1); ++j) {
        si += sc[j] * dots[j];
        sm += m[j] * sub_sums[j];
      }
      isum[(b * steps + p) * kInterleavedRows] = si;
      imin[(b * steps + p) * kInterleavedRows] = sm;
    }
  }
}

// f32(isum) may round (the gemv's |Σ| can pass 2^24): cvtepi32_ps and static_cast<float> both round
// to nearest even.
void Q4KAccumulate8Scalar(const float* dw, const float* dminw, const float* da, const int32_t* isum,
                          const int32_t* imin, int64_t nb, int steps, float* y) {
  for (int l = 0; l < kInterleavedRows; ++l) {
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
      const float scale = dw[b * kInterleavedRows + l] * da[b];         // _mm*_mul_ps(col_scale_f32, row_scale)
      const float scale_min = dminw[b * kInterleavedRows + l] * da[b];  // _mm*_mul_ps(col_dmin_f32, row_scale)
      for (int p = 0; p < steps; ++p) {
        const int64_t i = (b * steps + p) * kInterleavedRows + l;
        acc = std::fma(static_cast<float>(isum[i]), scale, acc);
        acc_min = std::fma(static_cast<float>(imin[i]), scale_min, acc_min);
      }
    }
    y[l] = acc - acc_min;  // _mm*_sub_ps(acc_rows[i], acc_min_rows[i])
  }
}

// ggml_quantize_mat_q8_K_4x8 (AVX2 branch), one row's super-block: codes q [256] of x [256];
// returns d. Its lane-wise max and "equal to the max" masks amount to: amax = max |x|, and
// iscale = -127/amax if some x == +amax, else +127/amax.
float QuantizeBlock4x8Scalar(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
  bool positive_max = false;
  for (int j = 0; j < kQK_K; ++j) positive_max = positive_max || x[j] == amax;
  float iscale = amax != 0.0f ? 127.f / amax : 0.0f;
  if (positive_max) iscale = amax != 0.0f ? -127.f / amax : 0.0f;
  for (int j = 0; j < kQK_K; ++j) q[j] = RoundPackI8(iscale * x[j]);  // _mm256_mul_ps, then round
  return amax != 0.0f ? 1 / iscale : 0.0f;                            // `maxScalar ? 1/iscale : 0`
}

void QuantizeQ8KRowRef(const float* x, int64_t k, Q8KActivationRow* out) {
  KV_CHECK(k % kQK_K == 0);
  ResizeRow(k, out);
  std::vector<BlockQ8_K> blocks(k / kQK_K);  // [k/256] quant/q8_activation.h's one definition
  QuantizeQ8_KRow(x, blocks.data(), k);
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    out->d[b] = blocks[b].d;
    std::memcpy(&out->qs[b * kQK_K], blocks[b].qs, kQK_K);
  }
  SubBlockSums(out);
}

void QuantizeQ8KRow4x8(const float* x, int64_t k, Q8KActivationRow* out) {
  KV_CHECK(k % kQK_K == 0);
  ResizeRow(k, out);
  for (int64_t b = 0; b < k / kQK_K; ++b) out->d[b] = QuantizeBlock4x8(x + b * kQK_K, &out->qs[b * kQK_K]);
  SubBlockSums(out);
}

Q4KActivations QuantizeForQ4KRepacked(const float* x, int64_t n, int64_t k) {
  KV_CHECK(k % kQK_K == 0 && n >= 0);
  // forward_mul_mat / forward_mul_mat_one_chunk: rows [0, n_gemm) by the 4x8 quantizer and the
  // gemm (which it calls only when nrows > 3, i.e. n_gemm > 0), the rest by from_float and gemv.
  Q4KActivations a;
  a.n_gemm = n - n % kGemmRowGroup;
  a.rows.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    if (i < a.n_gemm)
      QuantizeQ8KRow4x8(x + i * k, k, &a.rows[i]);
    else
      QuantizeQ8KRowRef(x + i * k, k, &a.rows[i]);
  }
  return a;
}

namespace {

// Up to 8 weight rows (one group of block_q4_Kx8) as the f32 steps read them: each row's sub-block
// scales and mins, and its d and dmin per super-block interleaved by row (the kernels' col_scale
// vectors). Rows past `count` keep d = dmin = 0 and sums 0: lanes computed and dropped.
struct Q4KGroup {
  Q4KRow rows[kInterleavedRows];  // [8] the group's rows, in order
  std::vector<float> d, dmin;     // [nb, 8]
  int count = 0;
};

void UnpackGroup(const WeightView& w, int64_t r, int count, int64_t nb, Q4KGroup* g) {
  g->count = count;
  g->d.assign(nb * kInterleavedRows, 0.0f);
  g->dmin.assign(nb * kInterleavedRows, 0.0f);
  for (int l = 0; l < count; ++l) {
    UnpackQ4KRow(w.row(r + l), nb, &g->rows[l]);
    for (int64_t b = 0; b < nb; ++b) {
      g->d[b * kInterleavedRows + l] = g->rows[l].d[b];
      g->dmin[b * kInterleavedRows + l] = g->rows[l].dmin[b];
    }
  }
}

}  // namespace

void Q4KRepackedRows(const Q4KActivations& a, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  KV_CHECK_MSG(w.type == QuantType::kQ4_K, "Q4KRepackedRows: the weight is not q4_K");
  KV_CHECK_MSG(w.rows % kInterleavedRows == 0, "Q4KRepackedRows: llama.cpp repacks q4_K only for rows % 8 == 0");
  const int64_t nb = w.cols / kQK_K;
  Q4KGroup group;
  std::vector<int32_t> isum(nb * kPairs * kInterleavedRows), imin(isum);  // [nb · steps, 8] pair sums
  float out[kInterleavedRows];                                            // [8] one group's outputs
  for (int64_t r = r0; r < r1; r += kInterleavedRows) {
    const int count = static_cast<int>(std::min<int64_t>(kInterleavedRows, r1 - r));
    UnpackGroup(w, r, count, nb, &group);
    for (int64_t i = 0; i < static_cast<int64_t>(a.rows.size()); ++i) {
      const int steps = i < a.n_gemm ? kPairs : 1;
      if (count < kInterleavedRows) std::fill(isum.begin(), isum.end(), 0), std::fill(imin.begin(), imin.end(), 0);
      const Q8KActivationRow& x = a.rows[i];
      for (int l = 0; l < count; ++l) {
        const Q4KRow& row = group.rows[l];
        Q4KPairSums(w.row(r + l), row.sc.data(), row.m.data(), x.qs.data(), x.sub_sums.data(), nb, steps, &isum[l],
                    &imin[l]);
      }
      Q4KAccumulate8(group.d.data(), group.dmin.data(), a.rows[i].d.data(), isum.data(), imin.data(), nb, steps, out);
      std::copy_n(out, count, y + i * ldy + r);
    }
  }
}

void Q4KRepackedMatMul(const float* x, int64_t n, const WeightView& w, float* y) {
  Q4KRepackedRows(QuantizeForQ4KRepacked(x, n, w.cols), w, 0, w.rows, y, w.rows);
}

}  // namespace kvaudit::ggml

#define KVAUDIT_ISA_SELF "ops/ggml/q4_k_repack.cc"
#include "base/isa_passes.h"  // the kernel below, once per kernel path

namespace kvaudit::ggml {
void Q4KSubBlockDots(const uint8_t* row, const int8_t* q, int64_t nb, int32_t* dots) {
  KVAUDIT_DISPATCH(ggml::Q4KSubBlockDots, row, q, nb, dots);
}
float QuantizeBlock4x8(const float* x, int8_t* q) { KVAUDIT_DISPATCH(ggml::QuantizeBlock4x8, x, q); }
void Q4KPairSums(const uint8_t* row, const int32_t* sc, const int32_t* m, const int8_t* q, const int32_t* sub_sums,
                 int64_t nb, int steps, int32_t* isum, int32_t* imin) {
  KVAUDIT_DISPATCH(ggml::Q4KPairSums, row, sc, m, q, sub_sums, nb, steps, isum, imin);
}
void Q4KAccumulate8(const float* dw, const float* dminw, const float* da, const int32_t* isum, const int32_t* imin,
                    int64_t nb, int steps, float* y) {
  KVAUDIT_DISPATCH(ggml::Q4KAccumulate8, dw, dminw, da, isum, imin, nb, steps, y);
}
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twin; this path's kernel below hides the dispatcher

#if defined(KVAUDIT_ISA_AVX2)  // also the AVX-512 pass
namespace {
// The 8 int32 lanes of one sub-block's 32 nibble·code products: maddubs (unsigned nibble × int8,
// pairs <= 2·15·128: no saturation) and madd with ones, as the repacked kernels pair them.
inline __m256i SubBlockLanes(__m256i nibbles, const int8_t* q) {
  const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles, qv), _mm256_set1_epi16(1));
}

// Super-block b's 8 sub-block dots: the 8 sub-blocks' lanes, then three rounds of hadd_epi32 and
// one add of the 128-bit halves leave sub-block s's sum in lane s (integer adds: exact in any order).
inline __m256i BlockDotsV(const uint8_t* row, const int8_t* q, int64_t b) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const uint8_t* qs = row + b * sizeof(BlockQ4_K) + offsetof(BlockQ4_K, qs);  // [128]
  const int8_t* qb = q + b * kQK_K;                                           // [256]
  __m256i v[8];                                                               // [8 sub-blocks] 8 int32 lanes each
  for (int c = 0; c < 4; ++c) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    v[2 * c] = SubBlockLanes(_mm256_and_si256(bytes, m4), qb + 64 * c);
    v[2 * c + 1] = SubBlockLanes(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4), qb + 64 * c + 32);
  }
  const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20), _mm256_permute2x128_si256(s0123, s4567, 0x31));
}
}  // namespace

void Q4KSubBlockDots(const uint8_t* row, const int8_t* q, int64_t nb, int32_t* dots) {
  for (int64_t b = 0; b < nb; ++b) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dots + b * 8), BlockDotsV(row, q, b));
}

// Per super-block: sc·dot and m·sum in lanes (mullo_epi32: exact, |sc·dot| <= 63·61440), then
// hadd_epi32 of the two leaves the pairs [sc01, sc23, m01, m23 | sc45, sc67, m45, m67]; the gemv
// adds them further to one sum each.
void Q4KPairSums(const uint8_t* row, const int32_t* sc, const int32_t* m, const int8_t* q, const int32_t* sub_sums,
                 int64_t nb, int steps, int32_t* isum, int32_t* imin) {
  for (int64_t b = 0; b < nb; ++b) {
    const auto load = [b](const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + b * 8)); };
    const __m256i prod = _mm256_mullo_epi32(BlockDotsV(row, q, b), load(sc));
    const __m256i mins = _mm256_mullo_epi32(load(sub_sums), load(m));
    alignas(32) int32_t pairs[8];  // [8] the hadd's lanes, as above
    _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), _mm256_hadd_epi32(prod, mins));
    if (steps == kPairs) {
      for (int p = 0; p < kPairs; ++p) {
        const int lane = p % 2 + 4 * (p / 2);  // pairs 0, 1 in lanes 0, 1; pairs 2, 3 in lanes 4, 5
        isum[(b * kPairs + p) * 8] = pairs[lane];
        imin[(b * kPairs + p) * 8] = pairs[lane + 2];
      }
    } else {
      isum[b * 8] = (pairs[0] + pairs[1]) + (pairs[4] + pairs[5]);
      imin[b * 8] = (pairs[2] + pairs[3]) + (pairs[6] + pairs[7]);
    }
  }
}

// The kernels' f32 steps with the 8 weight rows in the 8 lanes, as their acc_rows / acc_min_rows
// registers hold them: one mul for the scales and one fma per step and lane, the scalar twin's.
void Q4KAccumulate8(const float* dw, const float* dminw, const float* da, const int32_t* isum, const int32_t* imin,
                    int64_t nb, int steps, float* y) {
  __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256 row_scale = _mm256_set1_ps(da[b]);
    const __m256 scale = _mm256_mul_ps(_mm256_loadu_ps(dw + b * 8), row_scale);
    const __m256 scale_min = _mm256_mul_ps(_mm256_loadu_ps(dminw + b * 8), row_scale);
    for (int p = 0; p < steps; ++p) {
      const int64_t i = (b * steps + p) * 8;
      const __m256i si = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(isum + i));
      const __m256i sm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(imin + i));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si), scale, acc);
      acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sm), scale_min, acc_min);
    }
  }
  _mm256_storeu_ps(y, _mm256_sub_ps(acc, acc_min));
}

// ggml_quantize_mat_q8_K_4x8's AVX2 branch for one row's super-block: max |x| over 8 lanes (exact
// in any order), the sign rule of QuantizeBlock4x8Scalar, then per 32 values _mm256_mul_ps,
// _mm256_round_ps(_MM_ROUND_NEAREST), cvtps_epi32, packs_epi32, packs_epi16 and the permute that
// puts the bytes back in element order.
float QuantizeBlock4x8(const float* x, int8_t* q) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 vmax = _mm256_setzero_ps();
  for (int j = 0; j < kQK_K; j += 8) vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
  alignas(32) float lanes[8];  // [8] the lanes' maxima
  _mm256_store_ps(lanes, vmax);
  float amax = 0.0f;
  for (float v : lanes) amax = std::max(amax, v);
  __m256 positive = _mm256_setzero_ps();
  for (int j = 0; j < kQK_K; j += 8)
    positive = _mm256_or_ps(positive, _mm256_cmp_ps(_mm256_loadu_ps(x + j), _mm256_set1_ps(amax), _CMP_EQ_OQ));
  float iscale = amax != 0.0f ? 127.f / amax : 0.0f;
  if (_mm256_movemask_ps(positive) != 0) iscale = amax != 0.0f ? -127.f / amax : 0.0f;
  const __m256 mul = _mm256_set1_ps(iscale);
  const auto codes = [&](int j) {
    const __m256 v =
        _mm256_round_ps(_mm256_mul_ps(mul, _mm256_loadu_ps(x + j)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_cvtps_epi32(v);
  };
  for (int j = 0; j < kQK_K; j += 32) {
    const __m256i i16a = _mm256_packs_epi32(codes(j), codes(j + 8));
    const __m256i i16b = _mm256_packs_epi32(codes(j + 16), codes(j + 24));
    const __m256i i8 = _mm256_packs_epi16(i16a, i16b);  // 4-byte groups in the order 0 2 4 6 1 3 5 7
    const __m256i ordered = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), ordered);
  }
  return amax != 0.0f ? 1 / iscale : 0.0f;
}
#else
float QuantizeBlock4x8(const float* x, int8_t* q) { return QuantizeBlock4x8Scalar(x, q); }
void Q4KSubBlockDots(const uint8_t* row, const int8_t* q, int64_t nb, int32_t* dots) {
  Q4KSubBlockDotsScalar(row, q, nb, dots);
}
void Q4KPairSums(const uint8_t* row, const int32_t* sc, const int32_t* m, const int8_t* q, const int32_t* sub_sums,
                 int64_t nb, int steps, int32_t* isum, int32_t* imin) {
  Q4KPairSumsScalar(row, sc, m, q, sub_sums, nb, steps, isum, imin);
}
void Q4KAccumulate8(const float* dw, const float* dminw, const float* da, const int32_t* isum, const int32_t* imin,
                    int64_t nb, int steps, float* y) {
  Q4KAccumulate8Scalar(dw, dminw, da, isum, imin, nb, steps, y);
}
#endif
}  // namespace ggml
#endif
