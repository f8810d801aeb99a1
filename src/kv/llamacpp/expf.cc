// libm-exact batched expf: see kv/llamacpp/expf.h. The vector kernel is compiled once per kernel
// path (base/isa_passes.h): 8 lanes on AVX-512, 4 on AVX2; the portable path is the libm call.
// Each path checks its own kernel once (its first ExpBatch / ExpBatchIsSimd call).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "kv/llamacpp/expf.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kvaudit::llamacpp {

void ExpBatchScalar(const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

}  // namespace kvaudit::llamacpp

#define KVAUDIT_ISA_SELF "kv/llamacpp/expf.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::llamacpp {
void ExpBatch(const float* x, float* y, int n) { KVAUDIT_DISPATCH(llamacpp::ExpBatch, x, y, n); }
bool ExpBatchIsSimd() { KVAUDIT_DISPATCH(llamacpp::ExpBatchIsSimd); }
void ExpBatchSimdUnchecked(const float* x, float* y, int n) {
  KVAUDIT_DISPATCH(llamacpp::ExpBatchSimdUnchecked, x, y, n);
}
}  // namespace kvaudit::llamacpp

#else  // one kernel path, in namespace kvaudit::isa_<path>::llamacpp (base/isa_passes.h)
namespace llamacpp {
using ::kvaudit::llamacpp::ExpBatchScalar;

#if defined(KVAUDIT_ISA_AVX2)
void ExpBatchSimdUnchecked(const float* x, float* y, int n);  // SelfCheck runs it

namespace {

// __exp2f_data (glibc sysdeps/ieee754/flt-32/e_exp2f_data.c, EXP2F_TABLE_BITS = 5): tab[i] =
// bits of 2^(i/32) − (i << 47); the scaled constants expf uses (N = 32). Read from glibc 2.36's
// libm.so.6 and checked by the self-test and bench/expf_exhaustive.
alignas(64) constexpr uint64_t kTab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
constexpr double kInvLn2N = std::bit_cast<double>(uint64_t{0x40471547652b82fe});  // 32/ln2
constexpr double kC0 = std::bit_cast<double>(uint64_t{0x3ebc6af84b912394});       // poly_scaled
constexpr double kC1 = std::bit_cast<double>(uint64_t{0x3f2ebfce50fac4f3});
constexpr double kC2 = std::bit_cast<double>(uint64_t{0x3f962e42ff0c52d6});
constexpr double kShift = std::bit_cast<double>(uint64_t{0x4338000000000000});  // 0x1.8p52
// expf's fast path: abstop = (bits(x) >> 20) & 0x7ff ≤ 0x42a (|x| < 88, finite).
constexpr int kAbsTopMax = 0x42a;

// Lanes outside the fast path: the libm call (the special cases, exactly as libm has them).
inline void FixSpecial(const float* x, float* y, unsigned mask) {
  while (mask) {
    const int i = std::countr_zero(mask);
    y[i] = std::exp(x[i]);
    mask &= mask - 1;
  }
}

#if defined(KVAUDIT_ISA_AVX512)
constexpr int kLanes = 8;
// 8 floats -> 8 expf values; returns the mask of lanes outside the fast path.
inline unsigned Exp8(const float* x, float* y) {
  const __m256 xf = _mm256_loadu_ps(x);
  const __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xf), 20), _mm256_set1_epi32(0x7ff));
  const unsigned special = static_cast<unsigned>(
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(kAbsTopMax)))));
  const __m512d xd = _mm512_cvtps_pd(xf);
  const __m512d inv = _mm512_set1_pd(kInvLn2N), shift = _mm512_set1_pd(kShift);
  __m512d kd = _mm512_fmadd_pd(inv, xd, shift);  // kd = z + shift, contracted as __expf_fma does
  const __m512i ki = _mm512_castpd_si512(kd);
  kd = _mm512_sub_pd(kd, shift);
  const __m512d r = _mm512_fmsub_pd(inv, xd, kd);  // r = z − kd, the same contraction
  const __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(31));
  const __m512i t0 = _mm512_load_si512(kTab), t1 = _mm512_load_si512(kTab + 8);
  const __m512i t2 = _mm512_load_si512(kTab + 16), t3 = _mm512_load_si512(kTab + 24);
  const __m512i lo = _mm512_permutex2var_epi64(t0, idx, t1), hi = _mm512_permutex2var_epi64(t2, idx, t3);
  __m512i t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(idx, _mm512_set1_epi64(16)), lo, hi);
  t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 52 - 5));
  const __m512d s = _mm512_castsi512_pd(t);
  const __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(kC0), r, _mm512_set1_pd(kC1));
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(kC2), r, _mm512_set1_pd(1.0));
  p = _mm512_fmadd_pd(z, r2, p);
  _mm256_storeu_ps(y, _mm512_cvtpd_ps(_mm512_mul_pd(p, s)));
  return special;
}
#else
constexpr int kLanes = 4;
inline unsigned Exp8(const float* x, float* y) {  // 4 lanes on AVX2 (the name keeps one call site)
  const __m128 xf = _mm_loadu_ps(x);
  const __m128i top = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), _mm_set1_epi32(0x7ff));
  const unsigned special =
      static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(top, _mm_set1_epi32(kAbsTopMax)))));
  const __m256d xd = _mm256_cvtps_pd(xf);
  const __m256d inv = _mm256_set1_pd(kInvLn2N), shift = _mm256_set1_pd(kShift);
  __m256d kd = _mm256_fmadd_pd(inv, xd, shift);
  const __m256i ki = _mm256_castpd_si256(kd);
  kd = _mm256_sub_pd(kd, shift);
  const __m256d r = _mm256_fmsub_pd(inv, xd, kd);
  const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab), idx, 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 52 - 5));
  const __m256d s = _mm256_castsi256_pd(t);
  const __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(kC0), r, _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(kC2), r, _mm256_set1_pd(1.0));
  p = _mm256_fmadd_pd(z, r2, p);
  _mm_storeu_ps(y, _mm256_cvtpd_ps(_mm256_mul_pd(p, s)));
  return special;
}
#endif

bool SelfCheck() {
  // A dense sweep of the fast path and its edges, every exponent's boundary values, and the
  // special inputs; any difference from libm -> the scalar twin.
  constexpr int kN = 1 << 16;
  std::vector<float> x(kN + 64), y(kN + 64);
  int n = 0;
  for (int i = 0; i < kN - 2048; ++i) x[n++] = -110.0f + 200.0f * static_cast<float>(i) / (kN - 2048);
  for (uint32_t e = 0; e < 256; ++e) {
    for (uint32_t m : {0u, 1u, 0x400000u, 0x7fffffu}) {
      x[n++] = std::bit_cast<float>((e << 23) | m);
      x[n++] = std::bit_cast<float>(0x80000000u | (e << 23) | m);
    }
  }
  while (n % 64) x[n++] = 0.0f;
  ExpBatchSimdUnchecked(x.data(), y.data(), n);
  for (int i = 0; i < n; ++i) {
    if (std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(std::exp(x[i]))) return false;
  }
  return true;
}

}  // namespace

void ExpBatchSimdUnchecked(const float* x, float* y, int n) {
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const unsigned special = Exp8(x + i, y + i);
    if (special) FixSpecial(x + i, y + i, special);
  }
  if (i < n) {  // the tail through a padded copy
    float xt[kLanes] = {}, yt[kLanes];
    std::memcpy(xt, x + i, sizeof(float) * (n - i));
    const unsigned special = Exp8(xt, yt) & ((1u << (n - i)) - 1);
    if (special) FixSpecial(xt, yt, special);
    std::memcpy(y + i, yt, sizeof(float) * (n - i));
  }
}

bool ExpBatchIsSimd() {
  static const bool ok = SelfCheck();
  return ok;
}

void ExpBatch(const float* x, float* y, int n) {
  if (ExpBatchIsSimd())
    ExpBatchSimdUnchecked(x, y, n);
  else
    ExpBatchScalar(x, y, n);
}

#else
void ExpBatchSimdUnchecked(const float* x, float* y, int n) { ExpBatchScalar(x, y, n); }
bool ExpBatchIsSimd() { return false; }
void ExpBatch(const float* x, float* y, int n) { ExpBatchScalar(x, y, n); }
#endif

}  // namespace llamacpp
#endif  // KVAUDIT_ISA_PASS
