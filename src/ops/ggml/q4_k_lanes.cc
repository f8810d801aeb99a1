// A group of 8 q4_K rows packed with the rows in lanes, and llama.cpp's repacked q4_K product on it
// (the contract and the per-output order are q4_k_repack.h's; why the layout: q4_k_lanes.h). The
// packing and the product are SIMD kernels of each kernel path (base/isa_passes.h) with scalar
// twins. The layout is ours; the lane-per-row idea is block_q4_Kx8's:
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/repack.cpp@de3ff815 (make_block_q4_Kx8)
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/repack.cpp@de3ff815 (ggml_gemm_q4_K_8x8_q8_K)
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include "ops/ggml/q4_k_lanes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/status.h"
#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {
namespace {

constexpr int kLanes = kQ4KInterleavedRows;  // 8: row l of the group is lane l
constexpr int kChunks = kQ4KSubBlock / 4;    // 4-byte words per 32 qs bytes of a row

// One packed super-block (kQ4KLaneBlockBytes), every field a whole number of 32-byte registers:
//   qs   [4 pairs][8 chunks][8 lanes][4 bytes]  row l's qs[32c + 4j .. 32c + 4j + 3]: elements
//        64c + 4j + e in the low nibbles (sub-block 2c), 64c + 32 + 4j + e in the high (2c + 1)
//   sc   [8 sub-blocks][8 lanes][2 × int16]     row l's 6-bit scale of sub-block s, twice
//   mins [4 pairs][8 lanes][2 × int16]          row l's mins of sub-blocks 2c and 2c + 1
//   d    [8 lanes] f32, dmin [8 lanes] f32      row l's block scales (fp16, widened exactly)
constexpr int64_t kQsAt = 0, kScAt = 1024, kMinsAt = 1280, kDAt = 1408, kDminAt = 1440;
static_assert(kDminAt + 4 * kLanes == kQ4KLaneBlockBytes && kQ4KLaneBlockBytes % 32 == 0);

// What a lane past the group's rows reads: d = dmin = 0, scales, mins and nibbles 0.
constexpr uint8_t kZeroBlock[sizeof(BlockQ4_K)] = {};

const uint8_t* BlockOf(const uint8_t* const rows[8], int count, int l, int64_t b) {
  return l < count ? rows[l] + b * sizeof(BlockQ4_K) : kZeroBlock;
}

int16_t I16At(const uint8_t* p) {
  int16_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float F32At(const uint8_t* p) {
  float v = 0.0f;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One activation row against the packed group: the scalar twin of q4_k_repack.cc's GroupRowScalar,
// reading the packed bytes.
void LaneRowScalar(const uint8_t* packed, int count, const Q8KActivationRow& x, int64_t nb, int steps, float* y) {
  const int per_step = kQ4KSubBlocks / steps;    // sub-blocks summed per step: 2 (gemm) or 8 (gemv)
  float acc[kLanes] = {}, acc_min[kLanes] = {};  // [8] the lanes
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = packed + b * kQ4KLaneBlockBytes;
    const int8_t* qb = x.qs.data() + b * kQK_K;  // [256] the activation's codes
    for (int l = 0; l < kLanes; ++l) {
      int32_t isum[kQ4KPairs] = {}, imin[kQ4KPairs] = {};  // [steps] exact integer sums
      for (int s = 0; s < kQ4KSubBlocks; ++s) {
        const int c = s / 2, h = s % 2;
        int32_t dot = 0;
        for (int i = 0; i < kQ4KSubBlock; ++i) {
          const uint8_t byte = p[kQsAt + 32 * (kChunks * c + i / 4) + 4 * l + i % 4];
          dot += ((byte >> (4 * h)) & 0x0f) * int32_t{qb[kQ4KSubBlock * s + i]};
        }
        isum[s / per_step] += I16At(p + kScAt + 4 * (kLanes * s + l)) * dot;
        imin[s / per_step] += I16At(p + kMinsAt + 4 * (kLanes * c + l) + 2 * h) * x.sub_sums[b * kQ4KSubBlocks + s];
      }
      const float scale = F32At(p + kDAt + 4 * l) * x.d[b], scale_min = F32At(p + kDminAt + 4 * l) * x.d[b];
      for (int q = 0; q < steps; ++q) {
        acc[l] = std::fma(static_cast<float>(isum[q]), scale, acc[l]);
        acc_min[l] = std::fma(static_cast<float>(imin[q]), scale_min, acc_min[l]);
      }
    }
  }
  for (int l = 0; l < count; ++l) y[l] = acc[l] - acc_min[l];
}

}  // namespace

void PackQ4KLanesScalar(const uint8_t* const rows[8], int count, int64_t nb, uint8_t* out) {
  KV_CHECK(count >= 1 && count <= kLanes);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* p = out + b * kQ4KLaneBlockBytes;
    for (int l = 0; l < kLanes; ++l) {
      const uint8_t* blk = BlockOf(rows, count, l, b);
      const uint8_t* qs = blk + offsetof(BlockQ4_K, qs);  // [128]
      for (int c = 0; c < kQ4KPairs; ++c)
        for (int j = 0; j < kChunks; ++j)
          std::memcpy(p + kQsAt + 32 * (kChunks * c + j) + 4 * l, qs + 32 * c + 4 * j, 4);
      for (int s = 0; s < kQ4KSubBlocks; ++s) {
        int sc = 0, m = 0;
        ScaleMinK4(s, blk + offsetof(BlockQ4_K, scales), &sc, &m);
        const int16_t twice[2] = {static_cast<int16_t>(sc), static_cast<int16_t>(sc)};
        std::memcpy(p + kScAt + 4 * (kLanes * s + l), twice, 4);
        const int16_t min = static_cast<int16_t>(m);
        std::memcpy(p + kMinsAt + 4 * (kLanes * (s / 2) + l) + 2 * (s % 2), &min, 2);
      }
      const float d = LoadF16(blk + offsetof(BlockQ4_K, d)), dmin = LoadF16(blk + offsetof(BlockQ4_K, dmin));
      std::memcpy(p + kDAt + 4 * l, &d, 4);
      std::memcpy(p + kDminAt + 4 * l, &dmin, 4);
    }
  }
}

void Q4KLaneRowsScalar(const uint8_t* packed, int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps,
                       float* y, int64_t ldy) {
  for (int a = 0; a < n_x; ++a) LaneRowScalar(packed, count, x[a], nb, steps, y + a * ldy);
}

}  // namespace kvaudit::ggml

#define KVAUDIT_ISA_SELF "ops/ggml/q4_k_lanes.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit::ggml {
void PackQ4KLanes(const uint8_t* const rows[8], int count, int64_t nb, uint8_t* out) {
  KVAUDIT_DISPATCH(ggml::PackQ4KLanes, rows, count, nb, out);
}
void Q4KLaneRows(const uint8_t* packed, int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps, float* y,
                 int64_t ldy) {
  KVAUDIT_DISPATCH(ggml::Q4KLaneRows, packed, count, x, n_x, nb, steps, y, ldy);
}
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twins; this path's kernels below hide the dispatchers

#if defined(KVAUDIT_ISA_AVX2)               // also the AVX-512 pass
#include "ops/ggml/q4_k_scales_avx2.inl.h"  // RowScales

namespace {
inline __m256i LoadI(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void StoreI(uint8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// r[l] holds 8 words of row l; afterwards r[j] holds word j of rows 0..7 (word j of row l in lane l).
inline void Transpose8x8(__m256i r[8]) {
  __m256i t[8], u[8];  // [8] the two rounds of unpacks
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]), u[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
    u[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]), u[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
    r[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
  }
}

// Bytes lo and hi (< 4) of each 32-bit word, zero-extended to its two int16 halves.
inline __m256i WordBytesToI16(__m256i words, int lo, int hi) {
  const auto byte = [](int k, int i) { return static_cast<char>(4 * k + i); };
  const char z = static_cast<char>(0x80);  // pshufb: a set top bit writes zero
  const __m128i m = _mm_setr_epi8(byte(0, lo), z, byte(0, hi), z, byte(1, lo), z, byte(1, hi), z, byte(2, lo), z,
                                  byte(2, hi), z, byte(3, lo), z, byte(3, hi), z);
  return _mm256_shuffle_epi8(words, _mm256_set_m128i(m, m));
}

// The packing of super-block b: the qs words transposed, the scale words decoded for 8 rows at
// once (ScaleMinK4Words, byte-parallel) and spread to int16 pairs, d and dmin widened by F16C.
void PackBlock(const uint8_t* const rows[8], int count, int64_t b, uint8_t* p) {
  const uint8_t* blk[kLanes];  // [8] super-block b of each row (kZeroBlock past count)
  for (int l = 0; l < kLanes; ++l) blk[l] = BlockOf(rows, count, l, b);
  for (int c = 0; c < kQ4KPairs; ++c) {
    __m256i r[kLanes];  // [8] row l's qs[32c .. 32c + 31]
    for (int l = 0; l < kLanes; ++l) r[l] = LoadI(blk[l] + offsetof(BlockQ4_K, qs) + 32 * c);
    Transpose8x8(r);
    for (int j = 0; j < kChunks; ++j) StoreI(p + kQsAt + 32 * (kChunks * c + j), r[j]);
  }
  uint32_t sm[4][kLanes];  // [word][lane] ScaleMinK4Words of each row
  for (int l = 0; l < kLanes; ++l) {
    uint32_t w[4];
    ScaleMinK4Words(blk[l] + offsetof(BlockQ4_K, scales), w);
    for (int k = 0; k < 4; ++k) sm[k][l] = w[k];
  }
  const __m256i sc03 = LoadI(reinterpret_cast<const uint8_t*>(sm[0])),
                sc47 = LoadI(reinterpret_cast<const uint8_t*>(sm[1]));
  const __m256i m03 = LoadI(reinterpret_cast<const uint8_t*>(sm[2])),
                m47 = LoadI(reinterpret_cast<const uint8_t*>(sm[3]));
  for (int s = 0; s < 4; ++s) {
    StoreI(p + kScAt + 32 * s, WordBytesToI16(sc03, s, s));
    StoreI(p + kScAt + 32 * (s + 4), WordBytesToI16(sc47, s, s));
  }
  for (int c = 0; c < 2; ++c) {
    StoreI(p + kMinsAt + 32 * c, WordBytesToI16(m03, 2 * c, 2 * c + 1));
    StoreI(p + kMinsAt + 32 * (c + 2), WordBytesToI16(m47, 2 * c, 2 * c + 1));
  }
  __m256 d, dmin;
  RowScales(rows, count, b, &d, &dmin);
  _mm256_storeu_ps(reinterpret_cast<float*>(p + kDAt), d);
  _mm256_storeu_ps(reinterpret_cast<float*>(p + kDminAt), dmin);
}

// Broadcasts the 4 codes at q to every 32-bit lane.
inline __m256i Codes4(const int8_t* q) {
  int32_t v = 0;
  std::memcpy(&v, q, sizeof v);
  return _mm256_set1_epi32(v);
}

// The gemm's (kSteps = 4) or gemv's (1) f32 steps for kNx activation rows, the 8 rows in lanes.
// Per pair c and activation row a: maddubs of 4 nibbles of each row (lane) with 4 broadcast codes,
// 8 of them summed in int16 (16 products of |15·128|: <= 30720, no wrap; maddubs' pairs <= 3840,
// no saturation), then madd by the sub-block's scale into int32 (exact), the two sub-blocks added.
template <int kNx, int kSteps>
void LaneRows(const uint8_t* packed, int count, const Q8KActivationRow* x, int64_t nb, float* y, int64_t ldy) {
  __m256 acc[kNx], acc_min[kNx];  // [n_x] 8 lanes: the group's rows
  for (int a = 0; a < kNx; ++a) acc[a] = acc_min[a] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = packed + b * kQ4KLaneBlockBytes;
    const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(p + kDAt));
    const __m256 dminw = _mm256_loadu_ps(reinterpret_cast<const float*>(p + kDminAt));
    __m256 scale[kNx], scale_min[kNx];  // [n_x] d_w·d_x and dmin_w·d_x (_mm256_mul_ps, as the kernels)
    for (int a = 0; a < kNx; ++a) {
      const __m256 row_scale = _mm256_set1_ps(x[a].d[b]);
      scale[a] = _mm256_mul_ps(dw, row_scale), scale_min[a] = _mm256_mul_ps(dminw, row_scale);
    }
    __m256i isum_all[kNx], imin_all[kNx];  // [n_x] the gemv's sums over the whole super-block
    for (int a = 0; a < kNx; ++a) isum_all[a] = imin_all[a] = _mm256_setzero_si256();
    for (int c = 0; c < kQ4KPairs; ++c) {
      __m256i lo16[kNx], hi16[kNx];  // [n_x] int16 sums of sub-blocks 2c and 2c + 1
      for (int a = 0; a < kNx; ++a) lo16[a] = hi16[a] = _mm256_setzero_si256();
      for (int j = 0; j < kChunks; ++j) {
        const __m256i w = LoadI(p + kQsAt + 32 * (kChunks * c + j));
        const __m256i lo = _mm256_and_si256(w, m4), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
        for (int a = 0; a < kNx; ++a) {
          const int8_t* q = x[a].qs.data() + b * kQK_K + 2 * kQ4KSubBlock * c + 4 * j;
          lo16[a] = _mm256_add_epi16(lo16[a], _mm256_maddubs_epi16(lo, Codes4(q)));
          hi16[a] = _mm256_add_epi16(hi16[a], _mm256_maddubs_epi16(hi, Codes4(q + kQ4KSubBlock)));
        }
      }
      const __m256i sc_lo = LoadI(p + kScAt + 64 * c), sc_hi = LoadI(p + kScAt + 64 * c + 32);
      const __m256i mins = LoadI(p + kMinsAt + 32 * c);
      for (int a = 0; a < kNx; ++a) {
        const __m256i isum = _mm256_add_epi32(_mm256_madd_epi16(lo16[a], sc_lo), _mm256_madd_epi16(hi16[a], sc_hi));
        const int32_t* sums = x[a].sub_sums.data() + b * kQ4KSubBlocks + 2 * c;  // |Σ| <= 32·128: exact in int16
        const __m256i pair = _mm256_set1_epi32(
            static_cast<int32_t>((static_cast<uint32_t>(sums[0]) & 0xFFFF) | (static_cast<uint32_t>(sums[1]) << 16)));
        const __m256i imin = _mm256_madd_epi16(mins, pair);
        if constexpr (kSteps == kQ4KPairs) {
          acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), scale[a], acc[a]);
          acc_min[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin), scale_min[a], acc_min[a]);
        } else {
          isum_all[a] = _mm256_add_epi32(isum_all[a], isum), imin_all[a] = _mm256_add_epi32(imin_all[a], imin);
        }
      }
    }
    if constexpr (kSteps == 1) {
      for (int a = 0; a < kNx; ++a) {
        acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum_all[a]), scale[a], acc[a]);
        acc_min[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin_all[a]), scale_min[a], acc_min[a]);
      }
    }
  }
  for (int a = 0; a < kNx; ++a) {
    alignas(32) float out[kLanes];  // [8] the group's outputs for activation row a
    _mm256_store_ps(out, _mm256_sub_ps(acc[a], acc_min[a]));
    std::copy_n(out, count, y + a * ldy);
  }
}
}  // namespace

void PackQ4KLanes(const uint8_t* const rows[8], int count, int64_t nb, uint8_t* out) {
  KV_CHECK(count >= 1 && count <= kLanes);
  for (int64_t b = 0; b < nb; ++b) PackBlock(rows, count, b, out + b * kQ4KLaneBlockBytes);
}

// One instance per activation count and step count, as Q4KGroupRows.
void Q4KLaneRows(const uint8_t* packed, int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps, float* y,
                 int64_t ldy) {
  KV_CHECK((n_x >= 1 && n_x <= kQ4KGemmRowGroup) && (steps == 1 || steps == kQ4KPairs));
  using Kernel = void (*)(const uint8_t*, int, const Q8KActivationRow*, int64_t, float*, int64_t);
  static constexpr Kernel kKernels[2][kQ4KGemmRowGroup] = {
      {LaneRows<1, 1>, LaneRows<2, 1>, LaneRows<3, 1>, LaneRows<4, 1>},
      {LaneRows<1, kQ4KPairs>, LaneRows<2, kQ4KPairs>, LaneRows<3, kQ4KPairs>, LaneRows<4, kQ4KPairs>}};
  kKernels[steps == kQ4KPairs][n_x - 1](packed, count, x, nb, y, ldy);
}
#else
void PackQ4KLanes(const uint8_t* const rows[8], int count, int64_t nb, uint8_t* out) {
  PackQ4KLanesScalar(rows, count, nb, out);
}
void Q4KLaneRows(const uint8_t* packed, int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps, float* y,
                 int64_t ldy) {
  Q4KLaneRowsScalar(packed, count, x, n_x, nb, steps, y, ldy);
}
#endif
}  // namespace ggml
#endif
