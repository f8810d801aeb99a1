// The canonical matmul order (ops/dot.h) on AVX2: the 16 lanes of a canonical dot are two ymm
// (lanes 0-7 and 8-15), every lane does one fma per 16-element step of k in ascending order, the
// tail is zero-padded into the same lanes, and the lanes are reduced by ReduceLanesRef's tree
// (i+8, i+4, i+2, i+1). Per output element these are the operations of MatMulCanonicalRef, so the
// bits are its bits and the AVX-512 tiles' (tests/unit/ops_batch_invariance_test.cc in this
// build; tests/unit/kv_cross_build_bits_test.cc across builds).
#ifndef KVAUDIT_ISA_PASS
#include "ops/matmul_avx2.h"  // first: includes base/simd.h

#include <algorithm>
#include <cmath>  // std::fma in ops/dot_simd.inl.h's scalar order
#include <cstring>

#include "quant/dequantize.h"

#define KVAUDIT_ISA_SELF "ops/matmul_avx2.cc"
#include "base/isa_passes.h"  // the AVX2 pass defines the kernel (the others compile nothing)

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/dot_simd.inl.h"
#include "ops/gemv_scratch.inl.h"
#include "ops/weight_load_simd.inl.h"

#if defined(KVAUDIT_MATMUL_AVX2)
namespace {

// One 16-element step of k, lanes 8h .. 8h + 7 only, for the MR x NR pairs: acc[a][b].
template <QuantType T, int MR, int NR>
inline void HalfStep(const float* const* x, const uint8_t* const* w, int64_t k, __m256 (&acc)[MR][NR]) {
  __m256 xv[MR];
  for (int a = 0; a < MR; ++a) xv[a] = _mm256_loadu_ps(x[a] + k);
  for (int b = 0; b < NR; ++b) {
    const __m256 wv = LoadW8<T>(w[b], k);
    for (int a = 0; a < MR; ++a) acc[a][b] = _mm256_fmadd_ps(xv[a], wv, acc[a][b]);
  }
}

// Steps [k0, k1) of k (whole 16-element steps), lanes 8h .. 8h + 7, added to acc: one half's
// MR·NR accumulators live in registers, not both halves' 2·MR·NR (each lane's fma sequence is the
// same either way).
template <QuantType T, int MR, int NR>
void HalfChunk(const float* const* x, const uint8_t* const* w, int64_t k0, int64_t k1, int h, __m256 (&acc)[MR][NR]) {
  __m256 r[MR][NR];
  for (int a = 0; a < MR; ++a) {
    for (int b = 0; b < NR; ++b) r[a][b] = acc[a][b];
  }
  for (int64_t k = k0; k < k1; k += 16) HalfStep<T, MR, NR>(x, w, k + 8 * h, r);
  for (int a = 0; a < MR; ++a) {
    for (int b = 0; b < NR; ++b) acc[a][b] = r[a][b];
  }
}

// out[a · NR + b] = the canonical dot of x[a] and W row w[b], over `in` elements: k in chunks small
// enough that both halves' passes over a chunk find its x and W rows in L1. The tail goes through
// zeroed copies: padded lanes get fma(0, 0, acc) as in the scalar order.
template <QuantType T, int MR, int NR>
void Tile(const float* const* x, const uint8_t* const* w, int64_t in, float* out) {
  constexpr int64_t kChunk = 256;  // elements: MR + NR rows of it stay within 7 KiB
  __m256 acc[2][MR][NR];           // [lanes 0-7 | 8-15][a][b]
  for (auto& half : acc) {
    for (auto& row : half) {
      for (__m256& v : row) v = _mm256_setzero_ps();
    }
  }
  const int64_t whole = in - in % 16;
  for (int64_t k0 = 0; k0 < whole; k0 += kChunk) {
    const int64_t k1 = std::min(whole, k0 + kChunk);
    HalfChunk<T, MR, NR>(x, w, k0, k1, 0, acc[0]);
    HalfChunk<T, MR, NR>(x, w, k0, k1, 1, acc[1]);
  }
  if (whole < in) {
    constexpr int kBytes = T == QuantType::kF32 ? 4 : 2;
    const int64_t len = in - whole;
    alignas(32) float xt[MR][16] = {};
    alignas(32) uint8_t wt[NR][16 * kBytes] = {};
    const float* xp[MR];
    const uint8_t* wp[NR];
    for (int a = 0; a < MR; ++a) {
      std::memcpy(xt[a], x[a] + whole, sizeof(float) * len);
      xp[a] = xt[a];
    }
    for (int b = 0; b < NR; ++b) {
      std::memcpy(wt[b], w[b] + whole * kBytes, kBytes * len);
      wp[b] = wt[b];
    }
    HalfChunk<T, MR, NR>(xp, wp, 0, 16, 0, acc[0]);
    HalfChunk<T, MR, NR>(xp, wp, 0, 16, 1, acc[1]);
  }
  for (int a = 0; a < MR; ++a) {
    for (int b = 0; b < NR; ++b) out[a * NR + b] = ReduceAdd16Avx2(acc[0][a][b], acc[1][a][b]);
  }
}

// Tiles of MR x rows × NR W rows; tails repeat the last valid row (one kernel; only valid outputs
// are stored), as the AVX-512 tiles do. 3 × 4 (prefill) and 1 × 12 (decode) keep one half's
// accumulators plus the operands within AVX2's 16 registers.
template <QuantType T, int MR, int NR>
void RowsT(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const int64_t in = w.cols;
  for (int64_t t0 = 0; t0 < n; t0 += MR) {
    const float* xr[MR];
    for (int a = 0; a < MR; ++a) xr[a] = x + std::min<int64_t>(t0 + a, n - 1) * in;
    for (int64_t j0 = r0; j0 < r1; j0 += NR) {
      const uint8_t* wr[NR];
      for (int b = 0; b < NR; ++b) wr[b] = w.row(std::min<int64_t>(j0 + b, r1 - 1));
      float tile[MR * NR];
      Tile<T, MR, NR>(xr, wr, in, tile);
      for (int a = 0; a < MR && t0 + a < n; ++a) {
        for (int b = 0; b < NR && j0 + b < r1; ++b) y[(t0 + a) * ldy + j0 + b] = tile[a * NR + b];
      }
    }
  }
}

// Prefill 512 on the bundled bf16 model, 1 thread, AMD EPYC (AVX2): 3 × 4 ~1,800 tokens/s, 4 × 3
// the same, 2 × 5 and 2 × 6 ~1,550, the 2 × 3 of both halves at once ~1,660 (bench/forward_bench).
constexpr int kPrefillRows = 3, kPrefillCols = 4, kDecodeRows = 12;
template <QuantType T>
void Rows(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if (n == 1) return RowsT<T, 1, kDecodeRows>(x, n, w, r0, r1, y, ldy);
  RowsT<T, kPrefillRows, kPrefillCols>(x, n, w, r0, r1, y, ldy);
}

// Decode over block-type rows, kGemvRows rows at a time: k runs in chunks of kBlockChunk, each
// chunk of the rows dequantized (DequantizeBlocks, this path's twin) into an L1 scratch
// [kGemvRows, kBlockChunk] and multiplied straight away; the two ymm of each row carry across
// chunks, so every lane sees the canonical sequence (k ascending, lane k mod 16) and the
// reduction is ReduceAdd16Avx2: the bits of the f32 gemv on the dequantized rows. (Before: all
// of 16 rows dequantized first, 24-64 KiB for the bundled model's widths, then Rows<1, 6>.)
constexpr int kGemvRows = 6;           // 12 accumulators + x + the scratch operand in 16 ymm (4, 8: 3% slower)
constexpr int64_t kBlockChunk = 256;   // a K-quant super-block; 8 legacy blocks
constexpr int64_t kPrefetchRows = 16;  // rows ahead whose chunk is prefetched (as the AVX-512 gemv)

}  // namespace

void GemvBlockRowsAvx2(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  KV_CHECK_MSG(IsBlockType(w.type), "GemvBlockRowsAvx2: not a block type");
  alignas(32) float s[kGemvRows][kBlockChunk];  // [kGemvRows rows, kBlockChunk] dequantized chunk
  for (int64_t j0 = row0; j0 < row1; j0 += kGemvRows) {
    const int nj = static_cast<int>(std::min<int64_t>(kGemvRows, row1 - j0));
    const uint8_t* wr[kGemvRows];
    const uint8_t* ahead[kGemvRows];
    for (int j = 0; j < kGemvRows; ++j) {
      wr[j] = w.row(std::min<int64_t>(j0 + j, row1 - 1));
      ahead[j] = j0 + kPrefetchRows + j < row1 ? w.row(j0 + kPrefetchRows + j) : nullptr;
    }
    __m256 acc[2][kGemvRows];  // [lanes 0-7 | 8-15, row]
    for (auto& half : acc) {
      for (__m256& v : half) v = _mm256_setzero_ps();
    }
    for (int64_t k0 = 0; k0 < w.cols; k0 += kBlockChunk) {
      const int64_t len = std::min(kBlockChunk, w.cols - k0);  // whole blocks (cols is), so len % 16 == 0
      DequantizeChunk<kGemvRows, kBlockChunk>(w, wr, ahead, nj, k0, len, s);
      for (int64_t k = 0; k < len; k += 16) {
        for (int h = 0; h < 2; ++h) {
          const __m256 xv = _mm256_loadu_ps(x + k0 + k + 8 * h);
          for (int j = 0; j < kGemvRows; ++j)
            acc[h][j] = _mm256_fmadd_ps(xv, _mm256_load_ps(s[j] + k + 8 * h), acc[h][j]);
        }
      }
    }
    for (int j = 0; j < nj; ++j) y[j0 + j] = ReduceAdd16Avx2(acc[0][j], acc[1][j]);
  }
}

void MatMulRowsAvx2(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  switch (w.type) {
    case QuantType::kF32: return Rows<QuantType::kF32>(x, n, w, r0, r1, y, ldy);
    case QuantType::kBF16: return Rows<QuantType::kBF16>(x, n, w, r0, r1, y, ldy);
    case QuantType::kF16: return Rows<QuantType::kF16>(x, n, w, r0, r1, y, ldy);
    default: KV_CHECK_MSG(false, "MatMulRowsAvx2: block types go through the packed kernels");
  }
}

#endif  // KVAUDIT_MATMUL_AVX2
#endif  // KVAUDIT_ISA_PASS
