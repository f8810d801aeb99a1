// The canonical-order matmul kernels (contract in ops/matmul.h, order in ops/dot.h).
#ifndef KVAUDIT_ISA_PASS
#include "ops/weight_load.h"  // first: see the note on GCC bug 105593

#include "ops/matmul.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "base/half.h"
#include "quant/dequantize.h"
#include "ops/dot.h"
#include "ops/gemv_blocks.h"
#include "ops/matmul_avx2.h"

namespace kvaudit {

namespace {
// Rows of W per prefill work item: 64 keeps the 2-thread split of the smallest projection (384
// outputs = 6 items) balanced, and a 64-row tile (48-96 KiB) stays in L2 while every group of 4
// x rows (L1) streams past it.
constexpr int64_t kRowTile = 64;
// Rows of W per gemv work item (decode): 64 rows x 384 weights = 48-96 KiB, large enough to
// amortise the pool hand-off, small enough to balance 2 threads on every projection.
constexpr int64_t kGemvGrain = 64;

void MatMulRowsScalar(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = r0; j < r1; ++j) {
      const uint8_t* row = w.row(j);
      const QuantType type = w.type;
      y[t * ldy + j] = DotCanonicalScalar(
          x + t * w.cols, [row, type](int64_t i) { return WeightAt(type, row, i); }, w.cols);
    }
  }
}

// Block types: rows of W are dequantized (quant/dequantize.h, ggml's arithmetic) into a
// per-thread f32 scratch right before the f32 kernel multiplies them, so every product and every
// accumulation is that of the same matrix dequantized at load: the bits are the same.
// [rows, w.cols] f32, per thread.
float* DequantScratch(int64_t rows, int64_t cols) {
  thread_local std::vector<float> scratch;
  const size_t need = static_cast<size_t>(rows * cols) + 16;
  if (scratch.size() < need) scratch.resize(need);
  return scratch.data();
}

// Rows of a block-type W dequantized per call to the prefill kernel: a tile of kRowTile rows,
// split so the scratch stays within ~256 KiB (L2) for wide matrices (d_ff = 14336: 4 rows).
int64_t BlockRowsPerPass(int64_t cols) {
  const int64_t fit = (int64_t{256} << 10) / (4 * std::max<int64_t>(cols, 1));
  return std::clamp<int64_t>(fit / 4 * 4, 4, kRowTile);
}

}  // namespace
}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "ops/matmul.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
namespace {
void MatMulRows(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  KVAUDIT_DISPATCH(MatMulRows, x, n, w, r0, r1, y, ldy);
}
}  // namespace

void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  KVAUDIT_DISPATCH(GemvRows, x, w, row0, row1, y);
}

void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  GemvRows(x, WeightView{w, QuantType::kF32, row1, in}, row0, row1, y);
}

void MatMulCanonicalRef(const float* x, int64_t n, const WeightView& w, float* y) {
  if (IsBlockType(w.type)) {
    std::vector<float> f(static_cast<size_t>(w.rows * w.cols));  // [rows, cols]
    WeightRowsToF32Ref(w, 0, w.rows, f.data());
    return MatMulRowsScalar(x, n, WeightView{f.data(), QuantType::kF32, w.rows, w.cols}, 0, w.rows, y, w.rows);
  }
  MatMulRowsScalar(x, n, w, 0, w.rows, y, w.rows);
}

void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool) {
  MatMul(x, n, WeightView{w, QuantType::kF32, out, in}, y, pool);
}

void MatMul(const float* x, int64_t n, const WeightView& w, float* y, ThreadPool& pool) {
  MatMulParts(x, n, &w, 1, y, pool);
}

void MatMul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool) {
  MatMulParts(x, n, w.parts().data(), static_cast<int>(w.parts().size()), y, pool);
}

void MatMulParts(const float* x, int64_t n, const WeightView* parts, int n_parts, float* y, ThreadPool& pool) {
  int64_t out = 0;
  for (int p = 0; p < n_parts; ++p) {
    KV_CHECK_MSG(parts[p].cols == parts[0].cols, "MatMul: parts differ in columns");
    out += parts[p].rows;
  }
  if (n <= 0 || out <= 0) return;
  if (n == 1) {
    // Output rows [r0, r1) of the stacked parts, split where a part ends.
    pool.ParallelFor(out, kGemvGrain, [&](int64_t r0, int64_t r1) {
      int64_t base = 0;
      for (int p = 0; p < n_parts; base += parts[p].rows, ++p) {
        const int64_t a = std::max(r0, base), b = std::min(r1, base + parts[p].rows);
        if (a < b) GemvRows(x, parts[p], a - base, b - base, y + base);
      }
    });
    return;
  }
  // Work items: the kRowTile-row tiles of each part in turn. Tiles are claimed dynamically; which
  // thread computes a tile never changes its values.
  std::vector<std::pair<int, int64_t>> tiles;  // (part, first row in the part)
  for (int p = 0; p < n_parts; ++p) {
    for (int64_t r = 0; r < parts[p].rows; r += kRowTile) tiles.emplace_back(p, r);
  }
  std::vector<int64_t> base(n_parts + 1, 0);  // [n_parts + 1] first output column of each part
  for (int p = 0; p < n_parts; ++p) base[p + 1] = base[p] + parts[p].rows;
  pool.ForEachItem(static_cast<int>(tiles.size()), [&](int t, int) {
    const auto [p, r0] = tiles[t];
    MatMulRows(x, n, parts[p], r0, std::min(parts[p].rows, r0 + kRowTile), y + base[p], out);
  });
}

}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "quant/block_vec.inl.h"
#include "ops/dot_simd.inl.h"
#include "ops/weight_load_simd.inl.h"
#include "ops/gemv_scratch.inl.h"

namespace {
#if defined(KVAUDIT_MATMUL_AVX512)
// The 16 canonical dots acc[j·MR + i] = x_i · w_j (MR·NR = 16), returned in ReduceAdd16x16Raw
// order. Each accumulator sees the canonical sequence whatever MR and NR are, so the 4x4 prefill
// tile and the 1x16 gemv give the same bits per element.
template <QuantType T, int MR, int NR, bool kPrefetch>
inline __m512 Tile16(const float* const* x, const uint8_t* const* w, int64_t in) {
  static_assert(MR * NR == 16);
  __m512 acc[16];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  // Gemv: prefetch the same columns of the next NR rows (contiguous after these); NR interleaved
  // streams are more than the hardware prefetcher runs far enough ahead on.
  const int64_t ahead = NR * in * QuantTypeBytes(T);
  int64_t k = 0;
  for (; k + 16 <= in; k += 16) {
    __m512 xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_loadu_ps(x[i] + k);
    for (int j = 0; j < NR; ++j) {
      if constexpr (kPrefetch)
        _mm_prefetch(reinterpret_cast<const char*>(w[j]) + ahead + k * QuantTypeBytes(T), _MM_HINT_T0);
      const __m512 wv = LoadW16<T>(w[j], k);
      for (int i = 0; i < MR; ++i) acc[j * MR + i] = _mm512_fmadd_ps(xv[i], wv, acc[j * MR + i]);
    }
  }
  if (k < in) {  // zero-padded tail: the same lanes as the scalar order
    const __mmask16 m = TailMask16(in - k);
    __m512 xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_maskz_loadu_ps(m, x[i] + k);
    for (int j = 0; j < NR; ++j) {
      const __m512 wv = LoadW16Masked<T>(w[j], k, m);
      for (int i = 0; i < MR; ++i) acc[j * MR + i] = _mm512_fmadd_ps(xv[i], wv, acc[j * MR + i]);
    }
  }
  return ReduceAdd16x16Raw(acc);
}

// y[n, out] rows [r0, r1) for n x rows: 4 x rows × 4 W rows per tile; tails repeat the last valid
// row pointer (a duplicated dot costs a little and keeps one kernel) and store only valid lanes.
template <QuantType T>
void MatMulRowsT(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  const int64_t in = w.cols;
  alignas(64) float buf[16];  // [4 x rows, 4 W rows] raw reduction order: lane 4i + j = y[i][j]
  for (int64_t i0 = 0; i0 < n; i0 += 4) {
    const int mi = static_cast<int>(std::min<int64_t>(4, n - i0));
    const float* xr[4];
    for (int i = 0; i < 4; ++i) xr[i] = x + std::min<int64_t>(i0 + i, n - 1) * in;
    for (int64_t j0 = r0; j0 < r1; j0 += 4) {
      const int nj = static_cast<int>(std::min<int64_t>(4, r1 - j0));
      const uint8_t* wr[4];
      for (int j = 0; j < 4; ++j) wr[j] = w.row(std::min<int64_t>(j0 + j, r1 - 1));
      _mm512_store_ps(buf, Tile16<T, 4, 4, false>(xr, wr, in));
      for (int i = 0; i < mi; ++i) std::memcpy(y + (i0 + i) * ldy + j0, buf + 4 * i, sizeof(float) * nj);
    }
  }
}

template <QuantType T>
void GemvRowsT(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  const float* xr[1] = {x};
  for (int64_t j0 = row0; j0 < row1; j0 += 16) {
    const int nj = static_cast<int>(std::min<int64_t>(16, row1 - j0));
    const uint8_t* wr[16];
    for (int j = 0; j < 16; ++j) wr[j] = w.row(std::min<int64_t>(j0 + j, row1 - 1));
    const __m512i natural = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    const __m512 r = _mm512_permutexvar_ps(natural, Tile16<T, 1, 16, true>(xr, wr, w.cols));
    _mm512_mask_storeu_ps(y + j0, TailMask16(nj), r);
  }
}

// Decode over block-type rows without an in-register decoder (ops/gemv_blocks.cc: q2_K, q3_K,
// iq4_xs), 16 rows at a time: k runs in chunks of kBlockChunk, each chunk of
// the 16 rows dequantized into an L1 scratch [16, kBlockChunk] and multiplied straight away; the
// 16 lane accumulators carry across chunks, so each sees the canonical sequence (k ascending,
// lane k mod 16) and the reduction is GemvRowsT's: the bits of the f32 gemv on the dequantized rows.
constexpr int64_t kBlockChunk = 256;  // a K-quant super-block; 8 legacy blocks
constexpr int64_t kPrefetchRows = 32;
void GemvBlockRowsAvx512(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  const int64_t in = w.cols;
  alignas(64) float s[16][kBlockChunk];  // [16 rows, kBlockChunk] dequantized chunk
  for (int64_t j0 = row0; j0 < row1; j0 += 16) {
    const int nj = static_cast<int>(std::min<int64_t>(16, row1 - j0));
    const uint8_t* wr[16];
    for (int j = 0; j < 16; ++j) wr[j] = w.row(std::min<int64_t>(j0 + j, row1 - 1));
    __m512 acc[16];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    // The same chunk of the rows kPrefetchRows ahead (the weights stream from L3 or DRAM: 16
    // interleaved row streams are more than the hardware prefetcher keeps ahead of).
    const uint8_t* ahead[16];
    for (int j = 0; j < 16; ++j) ahead[j] = j0 + kPrefetchRows + j < row1 ? w.row(j0 + kPrefetchRows + j) : nullptr;
    for (int64_t k0 = 0; k0 < in; k0 += kBlockChunk) {
      const int64_t len = std::min(kBlockChunk, in - k0);  // whole blocks: in is
      DequantizeChunk<16, kBlockChunk>(w, wr, ahead, nj, k0, len, s);
      for (int64_t k = 0; k < len; k += 16) {
        const __m512 xv = _mm512_loadu_ps(x + k0 + k);
        for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(xv, _mm512_load_ps(s[j] + k), acc[j]);
      }
    }
    const __m512i natural = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    _mm512_mask_storeu_ps(y + j0, TailMask16(nj), _mm512_permutexvar_ps(natural, ReduceAdd16x16Raw(acc)));
  }
}

// The f32 / 16-bit kernels: y[t · ldy + j] for t < n, j in [r0, r1).
void MatMulRowsPlain(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  switch (w.type) {
    case QuantType::kF32: return MatMulRowsT<QuantType::kF32>(x, n, w, r0, r1, y, ldy);
    case QuantType::kBF16: return MatMulRowsT<QuantType::kBF16>(x, n, w, r0, r1, y, ldy);
    case QuantType::kF16: return MatMulRowsT<QuantType::kF16>(x, n, w, r0, r1, y, ldy);
    default: KV_CHECK_MSG(false, "MatMulRowsPlain: block types go through MatMulRows");
  }
}
void GemvRowsPlain(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  switch (w.type) {
    case QuantType::kF32: return GemvRowsT<QuantType::kF32>(x, w, row0, row1, y);
    case QuantType::kBF16: return GemvRowsT<QuantType::kBF16>(x, w, row0, row1, y);
    case QuantType::kF16: return GemvRowsT<QuantType::kF16>(x, w, row0, row1, y);
    default: KV_CHECK_MSG(false, "GemvRowsPlain: block types go through GemvRows");
  }
}
#elif defined(KVAUDIT_MATMUL_AVX2)
void MatMulRowsPlain(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  MatMulRowsAvx2(x, n, w, r0, r1, y, ldy);
}
void GemvRowsPlain(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  MatMulRowsAvx2(x, 1, w, row0, row1, y, w.rows);
}
#else
void MatMulRowsPlain(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  MatMulRowsScalar(x, n, w, r0, r1, y, ldy);
}
void GemvRowsPlain(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  MatMulRowsScalar(x, 1, w, row0, row1, y, w.rows);
}
#endif

// Rows [r0, r1) of block-type w as an f32 view of r1 - r0 rows over the scratch.
WeightView DequantizeRowsToScratch(const WeightView& w, int64_t r0, int64_t r1) {
  float* s = DequantScratch(r1 - r0, w.cols);
  for (int64_t r = r0; r < r1; ++r) KVAUDIT_ISA_NS::DequantizeBlocks(w.type, w.row(r), s + (r - r0) * w.cols, w.cols);
  return {s, QuantType::kF32, r1 - r0, w.cols, nullptr};
}

}  // namespace

void MatMulRows(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if (!IsBlockType(w.type)) return MatMulRowsPlain(x, n, w, r0, r1, y, ldy);
  const int64_t step = BlockRowsPerPass(w.cols);
  for (int64_t a = r0; a < r1; a += step) {
    const int64_t b = std::min(r1, a + step);
    const WeightView f = DequantizeRowsToScratch(w, a, b);
    MatMulRowsPlain(x, n, f, 0, b - a, y + a, ldy);
  }
}

void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  if (!IsBlockType(w.type)) return GemvRowsPlain(x, w, row0, row1, y);
  if (KVAUDIT_ISA_NS::GemvBlockRowsDecoded(x, w, row0, row1, y)) return;  // ops/gemv_blocks.cc
#if defined(KVAUDIT_MATMUL_AVX512)
  return GemvBlockRowsAvx512(x, w, row0, row1, y);
#elif defined(KVAUDIT_MATMUL_AVX2)
  return GemvBlockRowsAvx2(x, w, row0, row1, y);
#else
  // 16 rows per pass: the gemv kernel's own group (one reduction for 16 outputs).
  for (int64_t a = row0; a < row1; a += 16) {
    const int64_t b = std::min(row1, a + 16);
    const WeightView f = DequantizeRowsToScratch(w, a, b);
    GemvRowsPlain(x, f, 0, b - a, y + a);
  }
#endif
}
#endif  // KVAUDIT_ISA_PASS
