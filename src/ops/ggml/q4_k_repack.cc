// Emulation of llama.cpp's repacked q4_K product on x86; the dispatch and the per-output order are
// in the header. One group of 8 weight rows against up to 4 activation rows (Q4KGroupRows: the integer
// sums and the f32 steps, the rows in the lanes as the kernels hold them) and the 4x8 quantizer are
// SIMD kernels of each kernel path (base/isa_passes.h) with scalar twins. Sources:
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
#include "ops/aligned_buffer.h"
#include "ops/ggml/q4_k_lanes.h"
#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"
#include "quant/quant_type.h"

namespace kvaudit::ggml {
namespace {

constexpr int kSub = kQ4KSubBlock, kSubs = kQ4KSubBlocks, kPairs = kQ4KPairs;  // q4_k_repack.h
constexpr int kGemmRowGroup = kQ4KGemmRowGroup, kInterleavedRows = kQ4KInterleavedRows;
static_assert(kSubs * kSub == kQK_K);
// Super-blocks ahead each row prefetches: 1 measured best on the 1B shape's decode (2 no better, 4
// slower: BENCHMARKS.md, the opening section).
constexpr int kPrefetchBlocks = 1;

// Why plain int32 sums give the kernels' integers: the kernels form nibble (0..15, unsigned) times
// code (int8) pairs with maddubs (saturating to int16: |2·15·128| = 3840, never reached) and add 8
// of them per int16 lane with wrapping add_epi16 (16 products: |16·15·128| = 30720 < 32768, never
// wraps), then madd with the 6-bit scale into int32 lanes. So no lane saturates or wraps, for any
// code in [-128, 127], and each lane holds the exact value; only the order of the f32 steps matters.
static_assert(16 * 15 * 128 < 32768, "an int16 lane of the q4_K kernels cannot wrap");

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

// make_block_q4_Kx8 keeps each row's d, dmin, nibbles and 6-bit scale/min pairs (re-encoded per
// sub-block index and decoded back by the kernels' kmask shuffle), so the values are
// get_scale_min_k4's; the nibbles are read as stored: qs byte 32c + l holds element 64c + l (low
// nibble, sub-block 2c) and 64c + 32 + l (high nibble, sub-block 2c + 1). Super-block by super-block,
// each lane's f32 steps in the order of the header (the lanes are independent).
namespace {
void GroupRowScalar(const uint8_t* const rows[8], int count, const Q8KActivationRow& x, int64_t nb, int steps,
                    float* y) {
  const int per_step = kSubs / steps;                                // sub-blocks summed per step: 2 (gemm) or 8 (gemv)
  float acc[kInterleavedRows] = {}, acc_min[kInterleavedRows] = {};  // [8] the lanes
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* qb = x.qs.data() + b * kQK_K;  // [256] the activation's codes
    for (int l = 0; l < kInterleavedRows; ++l) {
      int32_t isum[kPairs] = {}, imin[kPairs] = {};  // [steps] exact integer sums (lanes past count: 0)
      float d = 0.0f, dmin = 0.0f;
      if (l < count) {
        const uint8_t* blk = rows[l] + b * sizeof(BlockQ4_K);  // {f16 d, f16 dmin, scales[12], qs[128]}
        d = LoadF16(blk + offsetof(BlockQ4_K, d));
        dmin = LoadF16(blk + offsetof(BlockQ4_K, dmin));
        const uint8_t* qs = blk + offsetof(BlockQ4_K, qs);  // [128]
        for (int s = 0; s < kSubs; ++s) {
          int sc = 0, m = 0;
          ScaleMinK4(s, blk + offsetof(BlockQ4_K, scales), &sc, &m);
          int32_t dot = 0;
          for (int i = 0; i < kSub; ++i)
            dot += ((qs[kSub * (s / 2) + i] >> (4 * (s % 2))) & 0x0f) * int32_t{qb[s * kSub + i]};
          isum[s / per_step] += sc * dot;
          imin[s / per_step] += m * x.sub_sums[b * kSubs + s];
        }
      }
      const float scale = d * x.d[b], scale_min = dmin * x.d[b];  // _mm*_mul_ps(col_scale_f32, row_scale)
      for (int p = 0; p < steps; ++p) {
        // f32(isum) may round (the gemv's |Σ| can pass 2^24): cvtepi32_ps and static_cast both round
        // to nearest even.
        acc[l] = std::fma(static_cast<float>(isum[p]), scale, acc[l]);
        acc_min[l] = std::fma(static_cast<float>(imin[p]), scale_min, acc_min[l]);
      }
    }
  }
  for (int l = 0; l < count; ++l) y[l] = acc[l] - acc_min[l];  // _mm*_sub_ps(acc_rows, acc_min_rows)
}
}  // namespace

void Q4KGroupRowsScalar(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int n_x, int64_t nb,
                        int steps, float* y, int64_t ldy) {
  for (int a = 0; a < n_x; ++a) GroupRowScalar(rows, count, x[a], nb, steps, y + a * ldy);
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

Q4KActivations QuantizeForQ4KRepacked(const float* x, int64_t n, int64_t k, ThreadPool* pool) {
  KV_CHECK(k % kQK_K == 0 && n >= 0);
  // forward_mul_mat / forward_mul_mat_one_chunk: rows [0, n_gemm) by the 4x8 quantizer and the
  // gemm (which it calls only when nrows > 3, i.e. n_gemm > 0), the rest by from_float and gemv.
  Q4KActivations a;
  a.n_gemm = n - n % kGemmRowGroup;
  a.rows.resize(n);
  ForRows(pool, n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (i < a.n_gemm)
        QuantizeQ8KRow4x8(x + i * k, k, &a.rows[i]);
      else
        QuantizeQ8KRowRef(x + i * k, k, &a.rows[i]);
    }
  });
  return a;
}

namespace {
// From this many activation rows on, each group of 8 rows is packed once (q4_k_lanes.h) and
// multiplied with its rows in lanes; below, Q4KGroupRows reads the rows as stored. Measured by
// bench/q4k_lanes_bench on the 1B shape's 8192 x 2048 and 2048 x 8192 weights (BENCHMARKS.md): at 4
// rows the packing eats the gain (0.94-1.06x), from 8 the lanes win (1.12-1.16x), at 64 1.43-1.46x.
constexpr int64_t kLaneMinRows = 8;

// Q4KRepackedRows with each group packed first: the same outputs, the same bits.
void LaneGroupRows(const Q4KActivations& a, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const int64_t nb = w.cols / kQK_K, n = static_cast<int64_t>(a.rows.size());
  AlignedBuffer packed(nb * kQ4KLaneBlockBytes / static_cast<int64_t>(sizeof(float)));  // [nb packed blocks]
  uint8_t* bytes = reinterpret_cast<uint8_t*>(packed.data());
  const uint8_t* group[kInterleavedRows] = {};  // [8] the group's rows as stored
  for (int64_t r = r0; r < r1; r += kInterleavedRows) {
    const int count = static_cast<int>(std::min<int64_t>(kInterleavedRows, r1 - r));
    for (int l = 0; l < count; ++l) group[l] = w.row(r + l);
    PackQ4KLanes(group, count, nb, bytes);
    for (int64_t i = 0; i < n;) {  // the gemm's rows 4 at a time (n_gemm % 4 == 0), then the gemv's one by one
      const int n_x = i < a.n_gemm ? kGemmRowGroup : 1;
      Q4KLaneRows(bytes, count, &a.rows[i], n_x, nb, i < a.n_gemm ? kPairs : 1, y + i * ldy + r, ldy);
      i += n_x;
    }
  }
}
}  // namespace

void Q4KRepackedRows(const Q4KActivations& a, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  KV_CHECK_MSG(w.type == QuantType::kQ4_K, "Q4KRepackedRows: the weight is not q4_K");
  KV_CHECK_MSG(w.rows % kInterleavedRows == 0, "Q4KRepackedRows: llama.cpp repacks q4_K only for rows % 8 == 0");
  const int64_t nb = w.cols / kQK_K, n = static_cast<int64_t>(a.rows.size());
  if (n >= kLaneMinRows) return LaneGroupRows(a, w, r0, r1, y, ldy);
  const uint8_t* group[kInterleavedRows] = {};      // [8] the group's rows as stored
  const uint8_t* following[kInterleavedRows] = {};  // [8] the next group's (null past the matrix)
  for (int64_t r = r0; r < r1; r += kInterleavedRows) {
    const int count = static_cast<int>(std::min<int64_t>(kInterleavedRows, r1 - r));
    for (int l = 0; l < kInterleavedRows; ++l) {
      if (l < count) group[l] = w.row(r + l);
      following[l] = r + kInterleavedRows + l < w.rows ? w.row(r + kInterleavedRows + l) : nullptr;
    }
    for (int64_t i = 0; i < n;) {  // the gemm's rows 4 at a time (n_gemm % 4 == 0), then the gemv's one by one
      const int n_x = i < a.n_gemm ? kGemmRowGroup : 1;
      // The next group is prefetched during the group's last pass only (its earlier passes hit the cache).
      Q4KGroupRows(group, count, &a.rows[i], n_x, nb, i < a.n_gemm ? kPairs : 1, y + i * ldy + r, ldy,
                   i + n_x == n ? following : nullptr);
      i += n_x;
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
float QuantizeBlock4x8(const float* x, int8_t* q) { KVAUDIT_DISPATCH(ggml::QuantizeBlock4x8, x, q); }
void Q4KGroupRows(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps,
                  float* y, int64_t ldy, const uint8_t* const following[8]) {
  KVAUDIT_DISPATCH(ggml::Q4KGroupRows, rows, count, x, n_x, nb, steps, y, ldy, following);
}
}  // namespace kvaudit::ggml

#else  // one kernel path, in namespace kvaudit::isa_<path>::ggml (base/isa_passes.h)
namespace ggml {
using namespace ::kvaudit::ggml;  // the scalar twin; this path's kernel below hides the dispatcher

#if defined(KVAUDIT_ISA_AVX2)               // also the AVX-512 pass
#include "ops/ggml/q4_k_scales_avx2.inl.h"  // RowScales

namespace {
// Lane l of the result = the sum of v[l]'s 8 lanes: three rounds of hadd_epi32 and one add of the
// 128-bit halves (integer adds: exact in any order).
inline __m256i LaneSums8(const __m256i v[8]) {
  const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(s0123, s4567, 0x20), _mm256_permute2x128_si256(s0123, s4567, 0x31));
}

// Sub-block j's 6-bit scale in every 16-bit lane, from the 8 scales as 16-bit lanes of each half.
inline __m256i ScaleOf(__m256i scales, int j) {
  return _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8))));
}

// The pair mins of 8 rows (pm[l] lane c) transposed: out[c] lane l = pm[l] lane c (rows 0..3 in the
// low half, 4..7 in the high one, as the kernels' lanes).
inline void TransposeMins(const __m128i pm[8], __m256i out[kPairs]) {
  __m256i m[4];  // [4] rows l and l + 4
  for (int l = 0; l < 4; ++l) m[l] = _mm256_set_m128i(pm[l + 4], pm[l]);
  const __m256i t0 = _mm256_unpacklo_epi32(m[0], m[1]), t1 = _mm256_unpacklo_epi32(m[2], m[3]);
  const __m256i t2 = _mm256_unpackhi_epi32(m[0], m[1]), t3 = _mm256_unpackhi_epi32(m[2], m[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t1), out[1] = _mm256_unpackhi_epi64(t0, t1);
  out[2] = _mm256_unpacklo_epi64(t2, t3), out[3] = _mm256_unpackhi_epi64(t2, t3);
}

// One weight row's super-block against the n_x activation rows' codes: per activation row a and
// sub-block pair c (= the gemm's step c: sub-blocks 2c and 2c + 1, the low and high nibbles of
// qs[32c..32c + 31]) 8 int32 lanes summing to Σ sc·dot over the pair (the gemv's steps = 1: over
// all pairs), and in lane c of pair_mins[a] the pair's Σ m·sum. The nibbles and scales are unpacked
// once for all activation rows. maddubs pairs nibble·code <= 2·15·128 (no saturation), madd by the
// scale <= 2·3840·63: every lane exact. The scale words go to a register as llama.cpp's kernels move
// them (_mm_set_epi32), not through memory.
struct RowBlock {
  const int8_t* q[kGemmRowGroup];  // [n_x] the activation rows' codes of this super-block [256]
  __m128i sums16[kGemmRowGroup];   // [n_x] their sub-block sums
};
template <int kNx, int kSteps>
inline void RowBlockSums(const uint8_t* blk, const RowBlock& x, __m256i lanes[kGemmRowGroup][kPairs],
                         __m128i pair_mins[kGemmRowGroup]) {
  uint32_t sm[4];  // bytes: sc 0..7, then m 0..7
  ScaleMinK4Words(blk + offsetof(BlockQ4_K, scales), sm);
  const __m256i s16 = _mm256_cvtepu8_epi16(_mm_set_epi32(static_cast<int>(sm[3]), static_cast<int>(sm[2]),
                                                         static_cast<int>(sm[1]), static_cast<int>(sm[0])));
  const __m256i scales = _mm256_permute2x128_si256(s16, s16, 0x00);  // sc 0..7 in each half
  const __m128i mins = _mm256_extracti128_si256(s16, 1);
  for (int a = 0; a < kNx; ++a) pair_mins[a] = _mm_madd_epi16(mins, x.sums16[a]);  // [4] m·sum by pairs
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const uint8_t* qs = blk + offsetof(BlockQ4_K, qs);  // [128]
  for (int c = 0; c < kPairs; ++c) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    const __m256i lo = _mm256_and_si256(bytes, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
    const __m256i sc_lo = ScaleOf(scales, 2 * c), sc_hi = ScaleOf(scales, 2 * c + 1);
    for (int a = 0; a < kNx; ++a) {
      const __m256i q_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q[a] + 64 * c));
      const __m256i q_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q[a] + 64 * c + 32));
      const __m256i v = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(lo, q_lo), sc_lo),
                                         _mm256_madd_epi16(_mm256_maddubs_epi16(hi, q_hi), sc_hi));
      if constexpr (kSteps == kPairs) {
        lanes[a][c] = v;
      } else {
        lanes[a][0] = c == 0 ? v : _mm256_add_epi32(lanes[a][0], v);
      }
    }
  }
}
}  // namespace

// The scalar twin's arithmetic with the 8 rows in 8 lanes: per super-block each row's pair lanes
// and pair mins (RowBlockSums), the steps' sums gathered into lanes (LaneSums8, TransposeMins),
// then per activation row one mul for the scales and one fma per step, as the kernels' registers
// hold them.
namespace {
template <int kNx, int kSteps>
void GroupRows(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int64_t nb, float* y, int64_t ldy,
               const uint8_t* const following[8]) {
  constexpr int n_x = kNx, steps = kSteps;
  __m256 acc[kGemmRowGroup], acc_min[kGemmRowGroup];  // [n_x] 8 lanes: the group's rows
  for (int a = 0; a < n_x; ++a) acc[a] = acc_min[a] = _mm256_setzero_ps();
  RowBlock block{.q = {}, .sums16 = {}};
  for (int64_t b = 0; b < nb; ++b) {
    for (int a = 0; a < n_x; ++a) {
      const int32_t* sub_sums = x[a].sub_sums.data() + b * kSubs;  // [8] |Σ| <= 32·128: exact in int16
      block.q[a] = x[a].qs.data() + b * kQK_K;
      block.sums16[a] = _mm_packs_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sub_sums)),
                                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(sub_sums + 4)));
    }
    __m256i lanes[kInterleavedRows][kGemmRowGroup][kPairs];  // [row][activation][step] summing to its isum
    __m128i pair_mins[kGemmRowGroup][kInterleavedRows];      // [activation][row] lane c: Σ m·sum of pair c
    for (int l = 0; l < kInterleavedRows; ++l) {
      if (l < count) {
        // 8 strided streams (one per row) defeat the hardware prefetcher: ask for a block ahead.
        const uint8_t* next = rows[l] + (b + kPrefetchBlocks) * sizeof(BlockQ4_K);
        for (int line = 0; line < 3 && b + kPrefetchBlocks < nb; ++line)
          _mm_prefetch(reinterpret_cast<const char*>(next + 64 * line), _MM_HINT_T0);
        if (following != nullptr && following[l] != nullptr) {  // the same block of the next group's row l
          const uint8_t* later = following[l] + b * sizeof(BlockQ4_K);
          for (int line = 0; line < 3; ++line)
            _mm_prefetch(reinterpret_cast<const char*>(later + 64 * line), _MM_HINT_T1);
        }
        __m128i mins[kGemmRowGroup];
        RowBlockSums<kNx, kSteps>(rows[l] + b * sizeof(BlockQ4_K), block, lanes[l], mins);
        for (int a = 0; a < n_x; ++a) pair_mins[a][l] = mins[a];
      } else {
        for (int a = 0; a < n_x; ++a) {
          for (__m256i& v : lanes[l][a]) v = _mm256_setzero_si256();
          pair_mins[a][l] = _mm_setzero_si128();
        }
      }
    }
    __m256 dw, dminw;
    RowScales(rows, count, b, &dw, &dminw);
    for (int a = 0; a < n_x; ++a) {
      __m256i imin[kPairs];  // [step] lane l: row l's Σ m·sum
      TransposeMins(pair_mins[a], imin);
      if (steps == 1)
        imin[0] = _mm256_add_epi32(_mm256_add_epi32(imin[0], imin[1]), _mm256_add_epi32(imin[2], imin[3]));
      const __m256 row_scale = _mm256_set1_ps(x[a].d[b]);
      const __m256 scale = _mm256_mul_ps(dw, row_scale), scale_min = _mm256_mul_ps(dminw, row_scale);
      for (int p = 0; p < steps; ++p) {
        const __m256i step_rows[kInterleavedRows] = {lanes[0][a][p], lanes[1][a][p], lanes[2][a][p], lanes[3][a][p],
                                                     lanes[4][a][p], lanes[5][a][p], lanes[6][a][p], lanes[7][a][p]};
        acc[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(LaneSums8(step_rows)), scale, acc[a]);
        acc_min[a] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[p]), scale_min, acc_min[a]);
      }
    }
  }
  for (int a = 0; a < n_x; ++a) {
    alignas(32) float out[kInterleavedRows];  // [8] the group's outputs for activation row a
    _mm256_store_ps(out, _mm256_sub_ps(acc[a], acc_min[a]));
    std::copy_n(out, count, y + a * ldy);
  }
}
}  // namespace

// One instance per activation count and step count: the loops over them unrolled (the decode's
// gemv is <1, 1>, the prefill's gemm <4, 4>).
void Q4KGroupRows(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps,
                  float* y, int64_t ldy, const uint8_t* const following[8]) {
  KV_CHECK((n_x >= 1 && n_x <= kGemmRowGroup) && (steps == 1 || steps == kPairs));
  using Kernel =
      void (*)(const uint8_t* const*, int, const Q8KActivationRow*, int64_t, float*, int64_t, const uint8_t* const*);
  static constexpr Kernel kKernels[2][kGemmRowGroup] = {
      {GroupRows<1, 1>, GroupRows<2, 1>, GroupRows<3, 1>, GroupRows<4, 1>},
      {GroupRows<1, kPairs>, GroupRows<2, kPairs>, GroupRows<3, kPairs>, GroupRows<4, kPairs>}};
  kKernels[steps == kPairs][n_x - 1](rows, count, x, nb, y, ldy, following);
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
void Q4KGroupRows(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps,
                  float* y, int64_t ldy, const uint8_t* const following[8]) {
  (void)following;  // a hint for the SIMD kernel's prefetch
  Q4KGroupRowsScalar(rows, count, x, n_x, nb, steps, y, ldy);
}
#endif
}  // namespace ggml
#endif
