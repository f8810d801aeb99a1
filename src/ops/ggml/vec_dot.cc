// llama.cpp's dot orders in scalar C++ (vec_dot.h). std::fma where the intrinsics fuse, plain
// f32 adds elsewhere; the project compiles with -ffp-contract=off, so nothing else fuses.
// DotQ8Blocks is also compiled once per kernel path (base/isa_passes.h): llama.cpp's AVX2 branch
// itself on the AVX2 and AVX-512 paths, the scalar twin elsewhere; the same bits on every path.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "ops/ggml/vec_dot.h"

#include <cmath>

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

float DotQ6_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
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

}  // namespace kvaudit::ggml

#define KVAUDIT_ISA_SELF "ops/ggml/vec_dot.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::ggml {
float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb) {
  KVAUDIT_DISPATCH(ggml::DotQ8Blocks, kind, kc, kd, km, qc, qd, qm, nb);
}
float Steps8(const float* w, const float* x, int64_t np) { KVAUDIT_DISPATCH(ggml::Steps8, w, x, np); }
float TinyBlas8(const float* w, const float* x, int64_t n) { KVAUDIT_DISPATCH(ggml::TinyBlas8, w, x, n); }
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twins; this path's kernels below hide the dispatchers

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

float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb) {
  if (kind == VecDotKind::kIq4Nl && nb % 2 == 1) return DotQ8BlocksScalar(kind, kc, kd, km, qc, qd, qm, nb);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float summs = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const __m256 l = LanesF(kc + b * 32, qc + b * 32);
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
#else
float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb) {
  return DotQ8BlocksScalar(kind, kc, kd, km, qc, qd, qm, nb);
}
#endif

#if defined(KVAUDIT_ISA_AVX2)  // the AVX2 build's float steps, on the AVX2 and AVX-512 paths
namespace {
float Lanes8Sum(__m256 v, bool hadd) {
  alignas(32) float lanes[8];  // [8]
  _mm256_store_ps(lanes, v);
  return hadd ? Hadd8(lanes) : Hsum8(lanes);
}
}  // namespace

float Steps8(const float* w, const float* x, int64_t np) {
  __m256 sum[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < np; i += 32)
    for (int j = 0; j < 4; ++j)
      sum[j] = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8 * j), _mm256_loadu_ps(x + i + 8 * j), sum[j]);
  return Lanes8Sum(_mm256_add_ps(_mm256_add_ps(sum[0], sum[2]), _mm256_add_ps(sum[1], sum[3])), true);
}

float TinyBlas8(const float* w, const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc);
  return Lanes8Sum(acc, false);
}
#else
float Steps8(const float* w, const float* x, int64_t np) { return Steps8Scalar(w, x, np); }
float TinyBlas8(const float* w, const float* x, int64_t n) { return TinyBlas8Scalar(w, x, n); }
#endif
}  // namespace ggml
#endif
