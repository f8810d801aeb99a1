// llama.cpp's dot orders in scalar C++ (vec_dot.h). std::fma where the intrinsics fuse, plain
// f32 adds elsewhere; the project compiles with -ffp-contract=off, so nothing else fuses.
// DotQ8Blocks, DotQ8BlockRow, DotQ6_KQ8_K, Steps8 and TinyBlas8, and the several-dot DotQ8BlockRows,
// DotQ8BlocksBatch and DotQ6_KQ8_KBatch, are also compiled once per kernel path (base/isa_passes.h):
// llama.cpp's AVX2 branches themselves on the AVX2 and AVX-512 paths, the scalar twins elsewhere;
// the same bits on every path.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "ops/ggml/vec_dot.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/status.h"
#include "quant/block_formats.h"

namespace kvaudit::ggml {

float Hsum8(const float a[8]) {
  const float r0 = a[4] + a[0], r1 = a[5] + a[1], r2 = a[6] + a[2], r3 = a[7] + a[3];
  return (r0 + r2) + (r1 + r3);
}

float Hadd8(const float a[8]) {
  const float t0 = a[0] + a[4], t1 = a[1] + a[5], t2 = a[2] + a[6], t3 = a[3] + a[7];
  return (t0 + t1) + (t2 + t3);
}

float Reduce16(const float a[16]) {
  float x[16];  // [16] the lanes, halved in place
  for (int l = 0; l < 16; ++l) x[l] = a[l];
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) x[l] = x[l] + x[l + w];
  return x[0];
}

namespace {

// The whole steps of ggml_vec_dot_f32/_f16 (4 accumulators of L lanes) and GGML_F32xL_REDUCE.
float Steps(X86Build b, const float* w, const float* x, int64_t np) {
  const int lanes = Lanes(b), step = 4 * lanes;
  float sum[4][16] = {};  // [GGML_F32_ARR][lanes] accumulators
  for (int64_t i = 0; i < np; i += step)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < lanes; ++l) {
        sum[j][l] = std::fma(w[i + lanes * j + l], x[i + lanes * j + l], sum[j][l]);
      }
  float reduced[16];  // [lanes] x0+x2, x1+x3, then their sum
  for (int l = 0; l < lanes; ++l) reduced[l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
  return b == X86Build::kAvx512 ? Reduce16(reduced) : Hadd8(reduced);
}

int64_t WholeSteps(X86Build b, int64_t n) { return n / (4 * Lanes(b)) * (4 * Lanes(b)); }

// The AVX2 build's steps through the kernel path's SIMD twin (the same operations, the same bits).
float StepsOf(X86Build b, const float* w, const float* x, int64_t np) {
  return b == X86Build::kAvx2 ? Steps8(w, x, np) : Steps(b, w, x, np);
}

}  // namespace

float Steps8Scalar(const float* w, const float* x, int64_t np) { return Steps(X86Build::kAvx2, w, x, np); }

float TinyBlas8Scalar(const float* w, const float* x, int64_t n) {
  float acc[8] = {};  // [8] lanes
  for (int64_t i = 0; i < n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(w[i + l], x[i + l], acc[l]);
  return Hsum8(acc);
}

float VecDotF32(X86Build b, const float* w, const float* x, int64_t n) {
  const int64_t np = WholeSteps(b, n);
  float sum = StepsOf(b, w, x, np);
  // `sumf += x[i]*y[i]`: GCC contracts it into one FMA (GNU C's -ffp-contract=fast, -mfma).
  for (int64_t i = np; i < n; ++i) sum = std::fma(w[i], x[i], sum);
  return sum;
}

float VecDotF16(X86Build b, const float* w, const float* x, int64_t n) {
  const int64_t np = WholeSteps(b, n);
  double sum = StepsOf(b, w, x, np);
  for (int64_t i = np; i < n; ++i) sum += static_cast<double>(w[i] * x[i]);
  return static_cast<float>(sum);
}

float TinyBlasDot(X86Build b, const float* w, const float* x, int64_t n) {
  if (b == X86Build::kAvx2) return TinyBlas8(w, x, n);
  const int lanes = Lanes(b);
  float acc[16] = {};  // [lanes]
  for (int64_t i = 0; i < n; i += lanes)
    for (int l = 0; l < lanes; ++l) acc[l] = std::fma(w[i + l], x[i + l], acc[l]);
  return b == X86Build::kAvx512 ? Reduce16(acc) : Hsum8(acc);
}

float DotQ8BlocksScalar(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                        const float* qd, const float* qm, int64_t nb) {
  float acc[2][8] = {};  // [accumulator (iq4_nl: even/odd block)][lane]
  float summs = 0.0f, tail = 0.0f;
  bool has_tail = false;
  for (int64_t b = 0; b < nb; ++b) {
    float lane[8];  // mul_sum_i8_pairs_float: 4 consecutive products per int32 lane
    for (int i = 0; i < 8; ++i) {
      int s = 0;
      for (int e = 0; e < 4; ++e) s += kc[b * 32 + 4 * i + e] * qc[b * 32 + 4 * i + e];
      lane[i] = static_cast<float>(s);
    }
    const float d = kd[b] * qd[b];
    if (kind == VecDotKind::kIq4Nl && (nb % 2 == 1) && b == nb - 1) {  // odd last block: scalar tail
      float s = 0.0f;
      for (int i = 0; i < 8; ++i) s += lane[i];  // exact (integers)
      tail = d * s;
      has_tail = true;
      continue;
    }
    float* a = acc[kind == VecDotKind::kIq4Nl ? (b & 1) : 0];
    for (int i = 0; i < 8; ++i) a[i] = std::fma(d, lane[i], a[i]);
    if (kind == VecDotKind::kAffine) summs = std::fma(km[b], qm[b], summs);
  }
  if (kind == VecDotKind::kIq4Nl) {
    for (int i = 0; i < 8; ++i) acc[0][i] = acc[0][i] + acc[1][i];
  }
  float r = Hsum8(acc[0]);
  if (kind == VecDotKind::kAffine) r = r + summs;
  if (has_tail) r = r + tail;
  return r;
}

float DotQ8BlockRowScalar(QuantType type, VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd,
                          const float* qm, int64_t nb) {
  // Per-thread scratch: a decode calls this once per weight row (the portable path, and iq4_nl's odd
  // rows on every path), so no allocation per call.
  thread_local std::vector<int8_t> codes;  // [nb·32] the row's codes
  thread_local std::vector<float> d, m;    // [nb] its block scales and mins
  codes.resize(static_cast<size_t>(nb * 32));
  d.resize(static_cast<size_t>(nb));
  m.assign(static_cast<size_t>(nb), 0.0f);
  const auto to_codes = GetQuantTraits(type).to_codes;
  KV_CHECK_MSG(to_codes != nullptr && GetQuantTraits(type).block_elems == 32,
               "DotQ8BlockRow: not a 32-element block type");
  to_codes(w, nb * 32, {codes.data(), d.data(), m.data()});
  return DotQ8BlocksScalar(kind, codes.data(), d.data(), m.data(), qc, qd, qm, nb);
}

void DotQ8BlockRowsScalar(QuantType type, VecDotKind kind, const uint8_t* w, int64_t row_bytes, int64_t n_rows,
                          const int8_t* qc, const float* qd, const float* qm, int64_t nb, float* out) {
  for (int64_t i = 0; i < n_rows; ++i) out[i] = DotQ8BlockRowScalar(type, kind, w + i * row_bytes, qc, qd, qm, nb);
}

void DotQ8BlocksBatchScalar(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, int64_t n_w,
                            const int8_t* qc, const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out,
                            int64_t ldo) {
  const bool affine = kind == VecDotKind::kAffine;
  for (int64_t i = 0; i < n_w; ++i) {
    for (int64_t t = 0; t < n_act; ++t) {
      out[t * ldo + i] = DotQ8BlocksScalar(kind, kc + i * nb * 32, kd + i * nb, affine ? km + i * nb : nullptr,
                                           qc + t * nb * 32, qd + t * nb, affine ? qm + t * nb : nullptr, nb);
    }
  }
}

namespace {

// q6_K's unsigned code (0..63) of element 32c + b of the 128-element half j (ql/qh of that half).
inline int Q6Code(const uint8_t* ql, const uint8_t* qh, int c, int b) {
  const int lo = c & 1 ? ql[32 + b] : ql[b];
  const int nibble = c < 2 ? lo & 0x0F : lo >> 4;
  return nibble | ((qh[b] >> (2 * c)) & 3) << 4;
}

// The 8 int32 lanes of one q6_K super-block against its q8_K block, as the AVX2 loop forms them.
void Q6Lanes(const BlockQ6_K& w, const BlockQ8_K& x, int32_t lanes[8]) {
  for (int m = 0; m < 8; ++m) lanes[m] = 0;
  for (int j = 0; j < 2; ++j) {
    const uint8_t* ql = w.ql + 64 * j;
    const uint8_t* qh = w.qh + 32 * j;
    for (int c = 0; c < 4; ++c) {
      const int8_t* q8 = x.qs + 128 * j + 32 * c;
      for (int m = 0; m < 8; ++m) {
        const int scale = w.scales[8 * j + 2 * c + m / 4];  // bytes 0..15 / 16..31 of the chunk
        int32_t products = 0;  // two maddubs pairs: at most 2·63·127 each, no int16 saturation
        for (int b = 4 * m; b < 4 * m + 4; ++b) products += Q6Code(ql, qh, c, b) * int32_t{q8[b]};
        lanes[m] += scale * products;
      }
    }
  }
  for (int m = 0; m < 8; ++m) {
    lanes[m] -= 32 * (int32_t{x.bsums[2 * m]} * w.scales[2 * m] + int32_t{x.bsums[2 * m + 1]} * w.scales[2 * m + 1]);
  }
}

}  // namespace

float DotQ6_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc[8] = {};  // [8] lanes
  for (int64_t b = 0; b < nb; ++b) {
    BlockQ6_K block;
    std::memcpy(&block, w + b * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
    int32_t lanes[8];  // [8]
    Q6Lanes(block, x[b], lanes);
    const float d = x[b].d * F16ToF32(block.d);
    for (int m = 0; m < 8; ++m) acc[m] = std::fma(d, static_cast<float>(lanes[m]), acc[m]);
  }
  return Hsum8(acc);
}

void DotQ6_KQ8_KBatchScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb, int64_t n_act, float* out, int64_t ldo) {
  for (int64_t t = 0; t < n_act; ++t) out[t * ldo] = DotQ6_KQ8_KScalar(w, x + t * nb, nb);
}

}  // namespace kvaudit::ggml

#define KVAUDIT_ISA_SELF "ops/ggml/vec_dot.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::ggml {
float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb) {
  KVAUDIT_DISPATCH(ggml::DotQ8Blocks, kind, kc, kd, km, qc, qd, qm, nb);
}
void DotQ8BlockRows(QuantType type, VecDotKind kind, const uint8_t* w, int64_t row_bytes, int64_t n_rows,
                    const int8_t* qc, const float* qd, const float* qm, int64_t nb, float* out) {
  KVAUDIT_DISPATCH(ggml::DotQ8BlockRows, type, kind, w, row_bytes, n_rows, qc, qd, qm, nb, out);
}
void DotQ8BlocksBatch(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, int64_t n_w,
                      const int8_t* qc, const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out,
                      int64_t ldo) {
  KVAUDIT_DISPATCH(ggml::DotQ8BlocksBatch, kind, kc, kd, km, n_w, qc, qd, qm, nb, n_act, out, ldo);
}
float Steps8(const float* w, const float* x, int64_t np) { KVAUDIT_DISPATCH(ggml::Steps8, w, x, np); }
float TinyBlas8(const float* w, const float* x, int64_t n) { KVAUDIT_DISPATCH(ggml::TinyBlas8, w, x, n); }
float DotQ6_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { KVAUDIT_DISPATCH(ggml::DotQ6_KQ8_K, w, x, nb); }
void DotQ6_KQ8_KBatch(const uint8_t* w, const BlockQ8_K* x, int64_t nb, int64_t n_act, float* out, int64_t ldo) {
  KVAUDIT_DISPATCH(ggml::DotQ6_KQ8_KBatch, w, x, nb, n_act, out, ldo);
}
float DotQ8BlockRow(QuantType type, VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd,
                    const float* qm, int64_t nb) {
  KVAUDIT_DISPATCH(ggml::DotQ8BlockRow, type, kind, w, qc, qd, qm, nb);
}
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twins; this path's kernels below hide the dispatchers

#if defined(KVAUDIT_ISA_AVX2)        // also the AVX-512 pass: llama.cpp's AVX2 branch
#include "ops/ggml/hsum_avx2.inl.h"  // HSum8V

namespace {
// mul_sum_i8_pairs_float (quants.c): the 8 lanes of a block's 32 code products, ax = |vx| given.
inline __m256 LanesAbs(__m256i ax, __m256i vx, __m256i vy) {
  const __m256i dot = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(vy, vx));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(dot, _mm256_set1_epi16(1)));
}
inline __m256i Load32(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256 LanesF(__m256i vx, const int8_t* y) {
  return LanesAbs(_mm256_sign_epi8(vx, vx), vx, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y)));
}
constexpr int kChains = 4;  // dots interleaved by the several-dot kernels (vec_dot.h)
}  // namespace

float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb) {
  if (kind == VecDotKind::kIq4Nl && nb % 2 == 1) return DotQ8BlocksScalar(kind, kc, kd, km, qc, qd, qm, nb);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const __m256 l = LanesF(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kc + b * 32)), qc + b * 32);
    const __m256 d = _mm256_set1_ps(kd[b] * qd[b]);
    if (kind == VecDotKind::kIq4Nl && (b & 1))
      acc1 = _mm256_fmadd_ps(d, l, acc1);
    else
      acc0 = _mm256_fmadd_ps(d, l, acc0);
    if (kind == VecDotKind::kAffine) summs = std::fma(km[b], qm[b], summs);
  }
  if (kind == VecDotKind::kIq4Nl) acc0 = _mm256_add_ps(acc0, acc1);
  float r = HSum8V(acc0);
  if (kind == VecDotKind::kAffine) r = r + summs;
  return r;
}

namespace {
// DotQ8Blocks (kSym or kAffine) of one weight row against activation rows t0..t0+3, each in its
// own accumulator: per block, the weight's codes and |codes| are loaded once for the 4 rows.
template <VecDotKind K>
void DotQ8Blocks4(const int8_t* kc, const float* kd, const float* km, const int8_t* qc, const float* qd,
                  const float* qm, int64_t nb, float* out, int64_t ldo) {
  __m256 acc[kChains];        // [4 activation rows] 8 lanes each
  float summs[kChains] = {};  // [4] Σ m·s (kAffine)
  for (__m256& a : acc) a = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i vx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kc + b * 32));
    const __m256i ax = _mm256_sign_epi8(vx, vx);
    for (int j = 0; j < kChains; ++j) {
      const int8_t* y = qc + (j * nb + b) * 32;
      const __m256 l = LanesAbs(ax, vx, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y)));
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(kd[b] * qd[j * nb + b]), l, acc[j]);
      if constexpr (K == VecDotKind::kAffine) summs[j] = std::fma(km[b], qm[j * nb + b], summs[j]);
    }
  }
  for (int j = 0; j < kChains; ++j) {
    float r = HSum8V(acc[j]);
    if constexpr (K == VecDotKind::kAffine) r = r + summs[j];
    out[j * ldo] = r;
  }
}
}  // namespace

namespace {
// One expanded weight row against all activation rows: 4 at a time (DotQ8Blocks4), then one by one.
void OneWeightRow(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out, int64_t ldo) {
  const bool affine = kind == VecDotKind::kAffine;
  int64_t t = 0;
  for (; kind != VecDotKind::kIq4Nl && t + kChains <= n_act; t += kChains) {
    const int8_t* y = qc + t * nb * 32;  // [4, nb·32] the 4 rows' codes
    if (affine)
      DotQ8Blocks4<VecDotKind::kAffine>(kc, kd, km, y, qd + t * nb, qm + t * nb, nb, out + t * ldo, ldo);
    else
      DotQ8Blocks4<VecDotKind::kSym>(kc, kd, km, y, qd + t * nb, nullptr, nb, out + t * ldo, ldo);
  }
  for (; t < n_act; ++t) {
    out[t * ldo] =  // qualified: this path's kernel (an unqualified call also finds the dispatcher by ADL)
        ggml::DotQ8Blocks(kind, kc, kd, km, qc + t * nb * 32, qd + t * nb, affine ? qm + t * nb : nullptr, nb);
  }
}

constexpr int kTileW = 4, kTileA = 2;  // tinyBLAS_Q0_AVX's AVX2 tile (gemm4xN<2>): 8 accumulators in 16 registers

// kSym outputs of 4 weight rows × 2 activation rows: per block, the 4 scale products d_w·d_x by
// one vector multiply (each the same f32 product as DotQ8Blocks4's), then per output fma(d_w·d_x,
// lanes, acc) and Hsum8. The 8 accumulators must stay in registers: the codes are re-read from L1
// for each product (as tinyBLAS_Q0_AVX::gemm4xN's loads are, which GCC folds into vpsignb's memory
// operand) rather than held, since holding the 4 weight rows' codes and |codes| as well spilled 4
// accumulators to the stack, each block's fma then waiting on a store and a reload.
void Tile4x2(const int8_t* kc, const float* kd, const int8_t* qc, const float* qd, int64_t nb, float* out,
             int64_t ldo) {
  __m256 acc[kTileA][kTileW];  // [activation row][weight row] 8 lanes each
  for (auto& row : acc)
    for (__m256& a : row) a = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m128 dw = _mm_setr_ps(kd[b], kd[nb + b], kd[2 * nb + b], kd[3 * nb + b]);  // [4] the weight rows' d
    const int8_t* w[kTileW] = {kc + b * 32, kc + (nb + b) * 32, kc + (2 * nb + b) * 32, kc + (3 * nb + b) * 32};
    for (int j = 0; j < kTileA; ++j) {
      const int8_t* y = qc + (j * nb + b) * 32;
      const __m128 d4 = _mm_mul_ps(dw, _mm_set1_ps(qd[j * nb + b]));  // [4] d_w·d_x
      const __m256 d = _mm256_set_m128(d4, d4);
      acc[j][0] = _mm256_fmadd_ps(_mm256_shuffle_ps(d, d, 0x00), LanesF(Load32(w[0]), y), acc[j][0]);
      acc[j][1] = _mm256_fmadd_ps(_mm256_shuffle_ps(d, d, 0x55), LanesF(Load32(w[1]), y), acc[j][1]);
      acc[j][2] = _mm256_fmadd_ps(_mm256_shuffle_ps(d, d, 0xAA), LanesF(Load32(w[2]), y), acc[j][2]);
      acc[j][3] = _mm256_fmadd_ps(_mm256_shuffle_ps(d, d, 0xFF), LanesF(Load32(w[3]), y), acc[j][3]);
    }
  }
  for (int j = 0; j < kTileA; ++j)
    for (int i = 0; i < kTileW; ++i) out[j * ldo + i] = HSum8V(acc[j][i]);
}
}  // namespace

void DotQ8BlocksBatch(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, int64_t n_w,
                      const int8_t* qc, const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out,
                      int64_t ldo) {
  int64_t i = 0;
  for (; kind == VecDotKind::kSym && i + kTileW <= n_w; i += kTileW) {
    int64_t t = 0;
    for (; t + kTileA <= n_act; t += kTileA)
      Tile4x2(kc + i * nb * 32, kd + i * nb, qc + t * nb * 32, qd + t * nb, nb, out + t * ldo + i, ldo);
    for (int64_t r = i; r < i + kTileW && t < n_act; ++r)  // the last n_act % 2 activation rows
      OneWeightRow(kind, kc + r * nb * 32, kd + r * nb, nullptr, qc + t * nb * 32, qd + t * nb, nullptr, nb, n_act - t,
                   out + t * ldo + r, ldo);
  }
  const bool affine = kind == VecDotKind::kAffine;
  for (; i < n_w; ++i)
    OneWeightRow(kind, kc + i * nb * 32, kd + i * nb, affine ? km + i * nb : nullptr, qc, qd, qm, nb, n_act, out + i,
                 ldo);
}
#else
float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb) {
  return DotQ8BlocksScalar(kind, kc, kd, km, qc, qd, qm, nb);
}
void DotQ8BlocksBatch(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, int64_t n_w,
                      const int8_t* qc, const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out,
                      int64_t ldo) {
  DotQ8BlocksBatchScalar(kind, kc, kd, km, n_w, qc, qd, qm, nb, n_act, out, ldo);
}
#endif

#if defined(KVAUDIT_ISA_AVX2)  // the AVX2 build's float steps, on the AVX2 and AVX-512 paths
namespace {
// GGML_F32_VEC_REDUCE's lane order (Hadd8), on a stored copy.
float Hadd8V(__m256 v) {
  alignas(32) float lanes[8];  // [8]
  _mm256_store_ps(lanes, v);
  return Hadd8(lanes);
}
}  // namespace

float Steps8(const float* w, const float* x, int64_t np) {
  __m256 sum[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < np; i += 32)
    for (int j = 0; j < 4; ++j)
      sum[j] = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8 * j), _mm256_loadu_ps(x + i + 8 * j), sum[j]);
  return Hadd8V(_mm256_add_ps(_mm256_add_ps(sum[0], sum[2]), _mm256_add_ps(sum[1], sum[3])));
}

float TinyBlas8(const float* w, const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc);
  return HSum8V(acc);
}
#else
float Steps8(const float* w, const float* x, int64_t np) { return Steps8Scalar(w, x, np); }
float TinyBlas8(const float* w, const float* x, int64_t n) { return TinyBlas8Scalar(w, x, n); }
#endif

#if defined(KVAUDIT_ISA_AVX2)  // the 32-element block dots of llama.cpp's AVX2 branches, unexpanded
namespace {
// bytes_from_nibbles_32 (quants.c): low nibbles of the 16 bytes as elements 0..15, high as 16..31.
inline __m256i Nibbles(const uint8_t* qs) {
  const __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp), _mm256_set1_epi8(0x0F));
}
// bytes_from_bits_32 · 0x10: byte j = 0x10 where bit j of the 32-bit qh is set, else 0.
inline __m256i HighBits(const uint8_t* qh) {
  const __m256i bytes = _mm256_shuffle_epi8(  // byte j = byte j/8 of qh (in both 128-bit halves)
      _mm256_set1_epi32(static_cast<int>(LoadU32(qh))),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));  // byte j: bit j % 8
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
}

// An fp16 scale by F16C (GGML_CPU_FP16_TO_FP32 on an F16C build of llama.cpp): the same f32 as
// LoadF16 for every finite or infinite value, without its branches.
inline float LoadF16C(const uint8_t* p) { return _cvtsh_ss(LoadU16(p)); }

// One block of type F at p: its 32 codes (the type's to_codes, in a register), d and m.
template <QuantType F>
inline __m256i BlockCodesV(const uint8_t* p, float* d, float* m) {
  *d = LoadF16C(p);
  if constexpr (F == QuantType::kQ4_0) {
    return _mm256_sub_epi8(Nibbles(p + 2), _mm256_set1_epi8(8));
  } else if constexpr (F == QuantType::kQ4_1) {
    *m = LoadF16C(p + 2);
    return Nibbles(p + 4);
  } else if constexpr (F == QuantType::kQ5_0) {
    return _mm256_sub_epi8(_mm256_or_si256(Nibbles(p + 6), HighBits(p + 2)), _mm256_set1_epi8(16));
  } else if constexpr (F == QuantType::kQ5_1) {
    *m = LoadF16C(p + 2);
    return _mm256_or_si256(Nibbles(p + 8), HighBits(p + 4));
  } else if constexpr (F == QuantType::kQ8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
  } else {  // kIq4Nl
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlValues));
    return _mm256_shuffle_epi8(_mm256_set_m128i(v, v), Nibbles(p + 2));
  }
}

// The stored size of one block of type f (quant/ggml_blocks.h).
constexpr int64_t BlockBytes(QuantType f) {
  return f == QuantType::kQ4_0   ? sizeof(BlockQ4_0)
         : f == QuantType::kQ4_1 ? sizeof(BlockQ4_1)
         : f == QuantType::kQ5_0 ? sizeof(BlockQ5_0)
         : f == QuantType::kQ5_1 ? sizeof(BlockQ5_1)
         : f == QuantType::kQ8_0 ? sizeof(BlockQ8_0)
                                 : sizeof(BlockIq4Nl);
}

// DotQ8Blocks' AVX2 loop with each block's codes unpacked in a register instead of loaded; the
// type a template argument so the unpacking is straight-line code in the loop.
template <QuantType F>
float DotQ8BlockRowOf(VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd, const float* qm,
                      int64_t nb) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    float kd = 0.0f, km = 0.0f;
    const __m256 l = LanesF(BlockCodesV<F>(w + b * BlockBytes(F), &kd, &km), qc + b * 32);
    const __m256 d = _mm256_set1_ps(kd * qd[b]);
    if (kind == VecDotKind::kIq4Nl && (b & 1))
      acc1 = _mm256_fmadd_ps(d, l, acc1);
    else
      acc0 = _mm256_fmadd_ps(d, l, acc0);
    if (kind == VecDotKind::kAffine) summs = std::fma(km, qm[b], summs);
  }
  if (kind == VecDotKind::kIq4Nl) acc0 = _mm256_add_ps(acc0, acc1);
  float r = HSum8V(acc0);
  if (kind == VecDotKind::kAffine) r = r + summs;
  return r;
}
}  // namespace

float DotQ8BlockRow(QuantType type, VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd,
                    const float* qm, int64_t nb) {
  if (kind == VecDotKind::kIq4Nl && nb % 2 == 1) return DotQ8BlockRowScalar(type, kind, w, qc, qd, qm, nb);
  switch (type) {
    case QuantType::kQ4_0: return DotQ8BlockRowOf<QuantType::kQ4_0>(kind, w, qc, qd, qm, nb);
    case QuantType::kQ4_1: return DotQ8BlockRowOf<QuantType::kQ4_1>(kind, w, qc, qd, qm, nb);
    case QuantType::kQ5_0: return DotQ8BlockRowOf<QuantType::kQ5_0>(kind, w, qc, qd, qm, nb);
    case QuantType::kQ5_1: return DotQ8BlockRowOf<QuantType::kQ5_1>(kind, w, qc, qd, qm, nb);
    case QuantType::kQ8_0: return DotQ8BlockRowOf<QuantType::kQ8_0>(kind, w, qc, qd, qm, nb);
    case QuantType::kIQ4_NL: return DotQ8BlockRowOf<QuantType::kIQ4_NL>(kind, w, qc, qd, qm, nb);
    default: return DotQ8BlockRowScalar(type, kind, w, qc, qd, qm, nb);  // which checks the type
  }
}

namespace {
// DotQ8BlockRowOf (kSym or kAffine) of weight rows [0, n_rows), 4 at a time, each in its own
// accumulator; the activation block is loaded once for the 4 rows.
template <QuantType F, VecDotKind K>
void DotQ8BlockRowsOf(const uint8_t* w, int64_t row_bytes, int64_t n_rows, const int8_t* qc, const float* qd,
                      const float* qm, int64_t nb, float* out) {
  int64_t r = 0;
  for (; r + kChains <= n_rows; r += kChains) {
    __m256 acc[kChains];        // [4 weight rows] 8 lanes each
    float summs[kChains] = {};  // [4] Σ m·s (kAffine)
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i vy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qc + b * 32));
      for (int j = 0; j < kChains; ++j) {
        float kd = 0.0f, km = 0.0f;
        const __m256i vx = BlockCodesV<F>(w + (r + j) * row_bytes + b * BlockBytes(F), &kd, &km);
        acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(kd * qd[b]), LanesAbs(_mm256_sign_epi8(vx, vx), vx, vy), acc[j]);
        if constexpr (K == VecDotKind::kAffine) summs[j] = std::fma(km, qm[b], summs[j]);
      }
    }
    for (int j = 0; j < kChains; ++j) {
      float y = HSum8V(acc[j]);
      if constexpr (K == VecDotKind::kAffine) y = y + summs[j];
      out[r + j] = y;
    }
  }
  for (; r < n_rows; ++r) out[r] = DotQ8BlockRowOf<F>(K, w + r * row_bytes, qc, qd, qm, nb);
}

template <VecDotKind K>
bool DotQ8BlockRowsKind(QuantType type, const uint8_t* w, int64_t row_bytes, int64_t n_rows, const int8_t* qc,
                        const float* qd, const float* qm, int64_t nb, float* out) {
  switch (type) {
    case QuantType::kQ4_0:
      return DotQ8BlockRowsOf<QuantType::kQ4_0, K>(w, row_bytes, n_rows, qc, qd, qm, nb, out), true;
    case QuantType::kQ4_1:
      return DotQ8BlockRowsOf<QuantType::kQ4_1, K>(w, row_bytes, n_rows, qc, qd, qm, nb, out), true;
    case QuantType::kQ5_0:
      return DotQ8BlockRowsOf<QuantType::kQ5_0, K>(w, row_bytes, n_rows, qc, qd, qm, nb, out), true;
    case QuantType::kQ5_1:
      return DotQ8BlockRowsOf<QuantType::kQ5_1, K>(w, row_bytes, n_rows, qc, qd, qm, nb, out), true;
    case QuantType::kQ8_0:
      return DotQ8BlockRowsOf<QuantType::kQ8_0, K>(w, row_bytes, n_rows, qc, qd, qm, nb, out), true;
    case QuantType::kIQ4_NL:
      return DotQ8BlockRowsOf<QuantType::kIQ4_NL, K>(w, row_bytes, n_rows, qc, qd, qm, nb, out), true;
    default: return false;
  }
}
}  // namespace

void DotQ8BlockRows(QuantType type, VecDotKind kind, const uint8_t* w, int64_t row_bytes, int64_t n_rows,
                    const int8_t* qc, const float* qd, const float* qm, int64_t nb, float* out) {
  if (kind == VecDotKind::kSym && DotQ8BlockRowsKind<VecDotKind::kSym>(type, w, row_bytes, n_rows, qc, qd, qm, nb, out))
    return;
  if (kind == VecDotKind::kAffine &&
      DotQ8BlockRowsKind<VecDotKind::kAffine>(type, w, row_bytes, n_rows, qc, qd, qm, nb, out))
    return;
  for (int64_t i = 0; i < n_rows; ++i) out[i] = ggml::DotQ8BlockRow(type, kind, w + i * row_bytes, qc, qd, qm, nb);
}
#else
float DotQ8BlockRow(QuantType type, VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd,
                    const float* qm, int64_t nb) {
  return DotQ8BlockRowScalar(type, kind, w, qc, qd, qm, nb);
}
void DotQ8BlockRows(QuantType type, VecDotKind kind, const uint8_t* w, int64_t row_bytes, int64_t n_rows,
                    const int8_t* qc, const float* qd, const float* qm, int64_t nb, float* out) {
  DotQ8BlockRowsScalar(type, kind, w, row_bytes, n_rows, qc, qd, qm, nb, out);
}
#endif

#if defined(KVAUDIT_ISA_AVX2)  // llama.cpp's AVX2 branch of ggml_vec_dot_q6_K_q8_K
namespace {
// The 4 chunks of 32 unsigned 6-bit codes of one 128-element half: low nibbles of ql[0..31] and
// ql[32..63], then their high nibbles, each with 2 bits of qh[0..31] (bits 0-1, 2-3, 4-5, 6-7) as
// bits 4-5. The 16-bit shifts never carry a byte's bits into its neighbour (masked before or after).
void Q6Chunks(const uint8_t* ql, const uint8_t* qh, __m256i q[4]) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
  const __m256i lo0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
  const __m256i lo1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  const __m256i nibble[4] = {_mm256_and_si256(lo0, m4), _mm256_and_si256(lo1, m4),
                             _mm256_and_si256(_mm256_srli_epi16(lo0, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(lo1, 4), m4)};
  for (int c = 0; c < 4; ++c) {
    const __m256i h = _mm256_and_si256(_mm256_srli_epi16(hi, 2 * c), m2);
    q[c] = _mm256_or_si256(nibble[c], _mm256_slli_epi16(h, 4));
  }
}

// Chunk k's two scales (scales[2k] in the low 8 16-bit lanes, scales[2k + 1] in the high 8): the
// madd operand of its 32 products. sc8 holds the block's 16 int8 scales.
inline __m256i ChunkScales(__m128i sc8, int k) {
  const __m128i pick = _mm_set_epi64x(0x0101010101010101LL * (2 * k + 1), 0x0101010101010101LL * (2 * k));
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick));
}

// One q6_K super-block (210 bytes as stored: ql[128], qh[64], scales[16], fp16 d) unpacked in
// registers: the 8 chunks of 32 unsigned codes, each chunk's two scales, the 16 scales widened.
struct Q6BlockV {
  __m256i q[8];   // [chunk 4j + c] Q6Chunks of half j
  __m256i sc[8];  // [chunk] ChunkScales
  __m256i scales;
};

inline __m128i Q6Scales(const uint8_t* blk) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales)));
}

void UnpackQ6V(const uint8_t* blk, Q6BlockV* u) {
  const __m128i sc8 = Q6Scales(blk);
  for (int j = 0; j < 2; ++j) {
    Q6Chunks(blk + offsetof(BlockQ6_K, ql) + 64 * j, blk + offsetof(BlockQ6_K, qh) + 32 * j, u->q + 4 * j);
    for (int c = 0; c < 4; ++c) u->sc[4 * j + c] = ChunkScales(sc8, 4 * j + c);
  }
  u->scales = _mm256_cvtepi8_epi16(sc8);
}

// 32·Σ bsum·scale, the part of every code's -32 offset (llama.cpp subtracts maddubs(32, q8) per
// chunk instead: the same exact integers).
inline __m256i Q6Offset(__m256i scales16, const BlockQ8_K& x) {
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
  return _mm256_slli_epi32(_mm256_madd_epi16(bsums, scales16), 5);
}

// Q6Lanes (the scalar twin's integers) as the AVX2 loop forms them: per chunk, maddubs of the
// unsigned codes with q8 (pairs <= 2·63·128 < 2^15: no saturation), madd with the chunk's two
// scales; then the offset subtracted once.
__m256i Q6LanesV(const Q6BlockV& w, const BlockQ8_K& x) {
  __m256i sumi = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * c));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(w.q[c], q8), w.sc[c]));
  }
  return _mm256_sub_epi32(sumi, Q6Offset(w.scales, x));
}

// The same integers for one activation row, straight from the stored block (nothing to share, so
// nothing kept: each half's chunks are used as they are unpacked).
__m256i Q6LanesOne(const uint8_t* blk, const BlockQ8_K& x) {
  const __m128i sc8 = Q6Scales(blk);
  __m256i sumi = _mm256_setzero_si256();
  for (int j = 0; j < 2; ++j) {
    __m256i q[4];
    Q6Chunks(blk + offsetof(BlockQ6_K, ql) + 64 * j, blk + offsetof(BlockQ6_K, qh) + 32 * j, q);
    for (int c = 0; c < 4; ++c) {
      const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * (4 * j + c)));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q[c], q8), ChunkScales(sc8, 4 * j + c)));
    }
  }
  return _mm256_sub_epi32(sumi, Q6Offset(_mm256_cvtepi8_epi16(sc8), x));
}

inline float Q6D(const uint8_t* blk) { return F16ToF32(LoadU16(blk + offsetof(BlockQ6_K, d))); }
}  // namespace

float DotQ6_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * sizeof(BlockQ6_K);
    const float d = x[b].d * Q6D(blk);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(Q6LanesOne(blk, x[b])), acc);
  }
  return HSum8V(acc);
}

// Activation rows 4 at a time, each block of the weight row unpacked once for the 4.
void DotQ6_KQ8_KBatch(const uint8_t* w, const BlockQ8_K* x, int64_t nb, int64_t n_act, float* out, int64_t ldo) {
  int64_t t = 0;
  for (; t + kChains <= n_act; t += kChains) {
    __m256 acc[kChains];  // [4 activation rows] 8 lanes each
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = w + b * sizeof(BlockQ6_K);
      Q6BlockV u;
      UnpackQ6V(blk, &u);
      const float dw = Q6D(blk);
      for (int j = 0; j < kChains; ++j) {
        const BlockQ8_K& xb = x[(t + j) * nb + b];
        acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(xb.d * dw), _mm256_cvtepi32_ps(Q6LanesV(u, xb)), acc[j]);
      }
    }
    for (int j = 0; j < kChains; ++j) out[(t + j) * ldo] = HSum8V(acc[j]);
  }
  for (; t < n_act; ++t) out[t * ldo] = ggml::DotQ6_KQ8_K(w, x + t * nb, nb);
}
#else
float DotQ6_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotQ6_KQ8_KScalar(w, x, nb); }
void DotQ6_KQ8_KBatch(const uint8_t* w, const BlockQ8_K* x, int64_t nb, int64_t n_act, float* out, int64_t ldo) {
  DotQ6_KQ8_KBatchScalar(w, x, nb, n_act, out, ldo);
}
#endif
}  // namespace ggml
#endif
