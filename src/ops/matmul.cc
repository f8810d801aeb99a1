// The canonical-order matmul kernels (contract in ops/matmul.h, order in ops/dot.h).
#include "ops/weight_load.h"  // first: see the note on GCC bug 105593

#include "ops/matmul.h"

#include <algorithm>
#include <cstring>

#include "ops/dot.h"
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

void MatMulRowsScalar(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = r0; j < r1; ++j) {
      const uint8_t* row = w.row(j);
      const WeightType type = w.type;
      y[t * w.rows + j] =
          DotCanonicalScalar(x + t * w.cols, [row, type](int64_t i) { return WeightAt(type, row, i); }, w.cols);
    }
  }
}

#if defined(KVAUDIT_MATMUL_AVX512)
// The 16 canonical dots acc[j·MR + i] = x_i · w_j (MR·NR = 16), returned in ReduceAdd16x16Raw
// order. Each accumulator sees the canonical sequence whatever MR and NR are, so the 4x4 prefill
// tile and the 1x16 gemv give the same bits per element.
template <WeightType T, int MR, int NR, bool kPrefetch>
inline __m512 Tile16(const float* const* x, const uint8_t* const* w, int64_t in) {
  static_assert(MR * NR == 16);
  __m512 acc[16];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  // Gemv: prefetch the same columns of the next NR rows (contiguous after these); NR interleaved
  // streams are more than the hardware prefetcher runs far enough ahead on.
  const int64_t ahead = NR * in * WeightTypeBytes(T);
  int64_t k = 0;
  for (; k + 16 <= in; k += 16) {
    __m512 xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_loadu_ps(x[i] + k);
    for (int j = 0; j < NR; ++j) {
      if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(w[j]) + ahead + k * WeightTypeBytes(T), _MM_HINT_T0);
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
template <WeightType T>
void MatMulRowsT(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y) {
  const int64_t in = w.cols, out = w.rows;
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
      for (int i = 0; i < mi; ++i) std::memcpy(y + (i0 + i) * out + j0, buf + 4 * i, sizeof(float) * nj);
    }
  }
}

template <WeightType T>
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

void MatMulRows(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y) {
  switch (w.type) {
    case WeightType::kF32: return MatMulRowsT<WeightType::kF32>(x, n, w, r0, r1, y);
    case WeightType::kBF16: return MatMulRowsT<WeightType::kBF16>(x, n, w, r0, r1, y);
    case WeightType::kF16: return MatMulRowsT<WeightType::kF16>(x, n, w, r0, r1, y);
    default: KV_CHECK_MSG(false, "MatMulRows: block types go through the packed kernels");
  }
}
#elif defined(KVAUDIT_MATMUL_AVX2)
void MatMulRows(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y) {
  MatMulRowsAvx2(x, n, w, r0, r1, y);
}
#else
void MatMulRows(const float* x, int64_t n, const WeightView& w, int64_t r0, int64_t r1, float* y) {
  MatMulRowsScalar(x, n, w, r0, r1, y);
}
#endif
}  // namespace

void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
#if defined(KVAUDIT_MATMUL_AVX512)
  switch (w.type) {
    case WeightType::kF32: return GemvRowsT<WeightType::kF32>(x, w, row0, row1, y);
    case WeightType::kBF16: return GemvRowsT<WeightType::kBF16>(x, w, row0, row1, y);
    case WeightType::kF16: return GemvRowsT<WeightType::kF16>(x, w, row0, row1, y);
    default: KV_CHECK_MSG(false, "GemvRows: block types go through the packed kernels");
  }
#else
  // MatMulRows writes y[t * rows + j]; with n = 1 that is y[j].
  MatMulRows(x, 1, w, row0, row1, y);
#endif
}

void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  GemvRows(x, WeightView{w, WeightType::kF32, row1, in}, row0, row1, y);
}

void MatMulCanonicalRef(const float* x, int64_t n, const WeightView& w, float* y) {
  MatMulRowsScalar(x, n, w, 0, w.rows, y);
}

void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool) {
  MatMul(x, n, WeightView{w, WeightType::kF32, out, in}, y, pool);
}

void MatMul(const float* x, int64_t n, const WeightView& w, float* y, ThreadPool& pool) {
  const int64_t out = w.rows;
  if (n <= 0 || out <= 0) return;
  if (n == 1) {
    pool.ParallelFor(out, kGemvGrain, [&](int64_t r0, int64_t r1) { GemvRows(x, w, r0, r1, y); });
    return;
  }
  const int64_t n_tiles = (out + kRowTile - 1) / kRowTile;
  // Tiles are claimed dynamically; which thread computes a tile never changes its values.
  pool.ForEachItem(static_cast<int>(n_tiles), [&](int t, int) {
    const int64_t r0 = t * kRowTile;
    MatMulRows(x, n, w, r0, std::min(out, r0 + kRowTile), y);
  });
}

}  // namespace kvaudit
