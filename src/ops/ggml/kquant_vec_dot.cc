// The K-quants' and iq4_xs's x86 vec_dots (kquant_vec_dot.h), scalar. std::fma where the AVX2 branch
// fuses (_mm256_fmadd_ps, _mm_fmadd_ps, the contracted q5_K `summs += dmin * int`); plain f32 adds
// elsewhere (the project compiles with -ffp-contract=off). Integer bounds below take |q8| <= 128 and
// |bsum| <= 16·128, what any q8_K row satisfies (bsums are sums of 16 codes).
// Each dot is also compiled once per kernel path (base/isa_passes.h): the AVX2 and AVX-512 paths
// form the 8 int32 lanes with AVX2 integer instructions (exact: the same integers in any order)
// and take the same f32 steps; the portable path runs the scalar twins (...Scalar).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "ops/ggml/kquant_vec_dot.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "ops/ggml/vec_dot.h"

namespace kvaudit::ggml {
namespace {

template <typename Block>
Block LoadBlock(const uint8_t* w, int64_t b) {
  Block block;
  std::memcpy(&block, w + b * sizeof(Block), sizeof(Block));
  return block;
}

// One chunk of 32 elements: lane m += scale · Σ_{e=4m}^{4m+3} u[e]·s[e]. As the SIMD forms it:
// _mm256_maddubs_epi16 (pairs to int16), _mm256_madd_epi16 with the scale (pairs to int32),
// _mm256_add_epi32 into the block's lanes. The callers bound each pair below 2^15 (no saturation).
void AddChunk(const int u[32], const int8_t* s, int scale, int32_t lanes[8]) {
  for (int m = 0; m < 8; ++m) {
    int32_t quad = 0;  // two int16 pairs
    for (int e = 4 * m; e < 4 * m + 4; ++e) quad += u[e] * int32_t{s[e]};
    lanes[m] += scale * quad;
  }
}

// The acc update every type ends its block with: acc_m = fma(d, f32(lane_m), acc_m). f32(lane) is
// _mm256_cvtepi32_ps (round to nearest even; exact here, |lane| < 2^24).
void FmaLanes(float d, const int32_t lanes[8], float acc[8]) {
  for (int m = 0; m < 8; ++m) acc[m] = std::fma(d, static_cast<float>(lanes[m]), acc[m]);
}

// The 8 mins (or scales) of q4_K/q5_K times the bsums: _mm_hadd_epi16 pairs bsums (2i, 2i+1) (no
// wrap: |pair| <= 4096), _mm_madd_epi16 pairs those with mins (2k, 2k+1): 4 int32 lanes.
void MinProducts(const uint8_t* scales, const BlockQ8_K& x, int32_t prod[4]) {
  for (int k = 0; k < 4; ++k) {
    prod[k] = 0;
    for (int j = 2 * k; j < 2 * k + 2; ++j) {
      int sc, min;
      ScaleMinK4(j, scales, &sc, &min);
      prod[k] += min * (int32_t{x.bsums[2 * j]} + x.bsums[2 * j + 1]);
    }
  }
}

// q2_K: chunk c = 4j + k (j = 128-element half, k = 2-bit plane of qs[32j..32j+31]); scales
// low nibble, mins high nibble of scales[16]. Pairs <= 2·3·128, |lane| <= 8·15·4·3·128.
void Q2Lanes(const BlockQ2_K& w, const BlockQ8_K& x, int32_t mins[8], int32_t lanes[8]) {
  for (int m = 0; m < 8; ++m) {  // _mm256_madd_epi16(mins, bsums): 16-groups 2m, 2m+1
    mins[m] =
        (w.scales[2 * m] >> 4) * int32_t{x.bsums[2 * m]} + (w.scales[2 * m + 1] >> 4) * int32_t{x.bsums[2 * m + 1]};
    lanes[m] = 0;
  }
  for (int c = 0; c < 8; ++c) {
    int code[32];  // [32] the chunk's 2-bit codes
    for (int e = 0; e < 32; ++e) code[e] = (w.qs[32 * (c / 4) + e] >> (2 * (c % 4))) & 3;
    int32_t half[8] = {};  // [8] lanes 0..3 take group 2c's scale, 4..7 group 2c+1's
    AddChunk(code, x.qs + 32 * c, 1, half);
    for (int m = 0; m < 8; ++m) lanes[m] += (w.scales[2 * c + m / 4] & 0x0F) * half[m];
  }
}

// q3_K: code = low 2 bits − (hmask bit c clear ? 4 : 0). The AVX2 code subtracts two maddubs
// (low·q8 pairs <= 768, 4·q8 pairs <= 1024: the int16 difference cannot wrap), the same integer.
void Q3Lanes(const BlockQ3_K& w, const BlockQ8_K& x, int32_t lanes[8]) {
  for (int m = 0; m < 8; ++m) lanes[m] = 0;
  for (int c = 0; c < 8; ++c) {
    int code[32];  // [32] signed 3-bit codes, -4..3
    for (int e = 0; e < 32; ++e) {
      const int low = (w.qs[32 * (c / 4) + e] >> (2 * (c % 4))) & 3;
      code[e] = low - ((w.hmask[e] >> c) & 1 ? 0 : 4);
    }
    int32_t half[8] = {};  // [8] lanes 0..3: scale 2c, 4..7: scale 2c+1 (get_scale_shuffle_q3k)
    AddChunk(code, x.qs + 32 * c, 1, half);
    for (int m = 0; m < 8; ++m) lanes[m] += ScaleK3(2 * c + m / 4, w.scales) * half[m];
  }
}

// q4_K / q5_K: chunk c = nibble plane c % 2 of qs[32(c/2)..], scale c (get_scale_shuffle_k4),
// q5_K adding 16 × bit c of qh[e]. Pairs <= 2·31·128; |lane| <= 8·63·4·31·128 < 2^23.
void Q45Lanes(const uint8_t* scales, const uint8_t* qs, const uint8_t* qh, const BlockQ8_K& x, int32_t lanes[8]) {
  for (int m = 0; m < 8; ++m) lanes[m] = 0;
  for (int c = 0; c < 8; ++c) {
    int code[32];  // [32] 4-bit (q4_K) or 5-bit (q5_K) unsigned codes
    for (int e = 0; e < 32; ++e) {
      code[e] = (qs[32 * (c / 2) + e] >> (4 * (c % 2))) & 0x0F;
      if (qh != nullptr) code[e] |= ((qh[e] >> c) & 1) << 4;
    }
    int sc, min;
    ScaleMinK4(c, scales, &sc, &min);
    AddChunk(code, x.qs + 32 * c, sc, lanes);
  }
}

// iq4_xs: sub-block c's codes kvalues_iq4nl[nibble] (low nibbles elements 0..15, high 16..31),
// multiplied as mul_add_epi8 does: maddubs(|v|, _mm256_sign_epi8(q8, v)), where negating a q8 of
// -128 wraps to -128. Pairs <= 2·127·128 < 2^15; |lane| <= 8·32·4·127·128 < 2^24. The AVX2 code
// keeps even and odd sub-blocks in two int32 accumulators and adds them: the same integers.
void Iq4XsLanes(const BlockIq4Xs& w, const BlockQ8_K& x, int32_t lanes[8]) {
  for (int m = 0; m < 8; ++m) lanes[m] = 0;
  for (int c = 0; c < 8; ++c) {
    int absv[32];    // [32] |kvalues_iq4nl[nibble]|
    int8_t sq8[32];  // [32] q8 with the code's sign
    for (int e = 0; e < 32; ++e) {
      const int v = kIq4NlValues[(w.qs[16 * c + e % 16] >> (4 * (e / 16))) & 0x0F];
      const int8_t q = x.qs[32 * c + e];
      absv[e] = v < 0 ? -v : v;
      sq8[e] = v > 0 ? q : static_cast<int8_t>(q == INT8_MIN ? q : -q);  // v is never 0
    }
    const int ls = (((w.scales_l[c / 2] >> (4 * (c % 2))) & 0x0F) | (((w.scales_h >> (2 * c)) & 3) << 4)) - 32;
    AddChunk(absv, sq8, ls, lanes);
  }
}

}  // namespace

float DotQ2_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc[8] = {};  // [8] lanes
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K block = LoadBlock<BlockQ2_K>(w, b);
    int32_t mins[8], lanes[8];  // [8] Σ min·bsum, [8] Σ scale·code·q8
    Q2Lanes(block, x[b], mins, lanes);
    const float d = x[b].d * F16ToF32(block.d);
    const float dmin = -x[b].d * F16ToF32(block.dmin);
    FmaLanes(dmin, mins, acc);  // the mins first, then the scales, into the same accumulator
    FmaLanes(d, lanes, acc);
  }
  return Hsum8(acc);
}

float DotQ3_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc[8] = {};  // [8] lanes
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_K block = LoadBlock<BlockQ3_K>(w, b);
    int32_t lanes[8];  // [8]
    Q3Lanes(block, x[b], lanes);
    FmaLanes(x[b].d * F16ToF32(block.d), lanes, acc);
  }
  return Hsum8(acc);
}

float DotQ4_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc[8] = {}, acc_m[4] = {};  // [8] lanes, [4] the mins' lanes (an __m128)
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_K block = LoadBlock<BlockQ4_K>(w, b);
    const float d = x[b].d * F16ToF32(block.d);
    const float dmin = -x[b].d * F16ToF32(block.dmin);
    int32_t prod[4], lanes[8];  // [4] Σ min·bsum pairs, [8] Σ scale·code·q8
    MinProducts(block.scales, x[b], prod);
    for (int k = 0; k < 4; ++k) acc_m[k] = std::fma(dmin, static_cast<float>(prod[k]), acc_m[k]);
    Q45Lanes(block.scales, block.qs, nullptr, x[b], lanes);
    FmaLanes(d, lanes, acc);
  }
  const float mins = (acc_m[0] + acc_m[2]) + (acc_m[1] + acc_m[3]);  // movehl, then movehdup + add_ss
  return Hsum8(acc) + mins;
}

float DotQ5_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc[8] = {}, summs = 0.0f;  // [8] lanes; the mins' scalar sum
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_K block = LoadBlock<BlockQ5_K>(w, b);
    const float d = x[b].d * F16ToF32(block.d);
    const float dmin = -x[b].d * F16ToF32(block.dmin);
    int32_t prod[4], lanes[8];  // [4] Σ min·bsum pairs, [8] Σ scale·code·q8
    MinProducts(block.scales, x[b], prod);
    const int32_t min_sum = (prod[0] + prod[1]) + (prod[2] + prod[3]);  // two _mm_hadd_epi32: exact
    summs = std::fma(dmin, static_cast<float>(min_sum), summs);
    Q45Lanes(block.scales, block.qs, block.qh, x[b], lanes);
    FmaLanes(d, lanes, acc);
  }
  return Hsum8(acc) + summs;
}

float DotIq4XsQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc[8] = {};  // [8] lanes
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIq4Xs block = LoadBlock<BlockIq4Xs>(w, b);
    int32_t lanes[8];  // [8]
    Iq4XsLanes(block, x[b], lanes);
    FmaLanes(F16ToF32(block.d) * x[b].d, lanes, acc);
  }
  return Hsum8(acc);
}

float DotIq4XsQ8_KPanelScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIq4Xs block = LoadBlock<BlockIq4Xs>(w, b);
    int32_t lanes[8];  // [8] the vec_dot's lanes; their sum is the panel's S (integers: any order)
    Iq4XsLanes(block, x[b], lanes);
    int32_t s = 0;  // |S| <= 8·32·32·127·128 < 2^31
    for (int m = 0; m < 8; ++m) s += lanes[m];
    acc = std::fma(static_cast<float>(s), F16ToF32(block.d) * x[b].d, acc);
  }
  return acc;
}

}  // namespace kvaudit::ggml

#define KVAUDIT_ISA_SELF "ops/ggml/kquant_vec_dot.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::ggml {
float DotQ2_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { KVAUDIT_DISPATCH(ggml::DotQ2_KQ8_K, w, x, nb); }
float DotQ3_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { KVAUDIT_DISPATCH(ggml::DotQ3_KQ8_K, w, x, nb); }
float DotQ4_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { KVAUDIT_DISPATCH(ggml::DotQ4_KQ8_K, w, x, nb); }
float DotQ5_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { KVAUDIT_DISPATCH(ggml::DotQ5_KQ8_K, w, x, nb); }
float DotIq4XsQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { KVAUDIT_DISPATCH(ggml::DotIq4XsQ8_K, w, x, nb); }
float DotIq4XsQ8_KPanel(const uint8_t* w, const BlockQ8_K* x, int64_t nb) {
  KVAUDIT_DISPATCH(ggml::DotIq4XsQ8_KPanel, w, x, nb);
}
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twins; this path's kernels below hide the dispatchers

#if defined(KVAUDIT_ISA_AVX2)        // also the AVX-512 pass: the AVX2 branches' integer lanes
#include "ops/ggml/hsum_avx2.inl.h"  // HSum8V, before the kernels that use it
#include "ops/ggml/kquant_vec_dot_avx2.inl.h"
#else
float DotQ2_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotQ2_KQ8_KScalar(w, x, nb); }
float DotQ3_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotQ3_KQ8_KScalar(w, x, nb); }
float DotQ4_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotQ4_KQ8_KScalar(w, x, nb); }
float DotQ5_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotQ5_KQ8_KScalar(w, x, nb); }
float DotIq4XsQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotIq4XsQ8_KScalar(w, x, nb); }
float DotIq4XsQ8_KPanel(const uint8_t* w, const BlockQ8_K* x, int64_t nb) { return DotIq4XsQ8_KPanelScalar(w, x, nb); }
#endif
}  // namespace ggml
#endif
