#include "ops/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#include "ops/aligned_buffer.h"

namespace kvaudit {

namespace {
// Rows of W per sgemm tile. 64 keeps the 2-thread split of the smallest projection (384 outputs =
// 6 tiles) balanced while each call still amortises packing x over 64 x in MACs.
constexpr int64_t kRowTile = 64;
// Rows of W per gemv work item (decode): 64 rows x 384 weights = 48-96 KiB, large enough to
// amortise the pool hand-off, small enough to balance 2 threads on every projection.
constexpr int64_t kGemvGrain = 64;
}  // namespace

void InitBlasSingleThreaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void MatMulRef(const float* x, int64_t n, const WeightView& w, float* y) {
  for (int64_t t = 0; t < n; ++t) GemvRef(x + t * w.cols, w, 0, w.rows, y + t * w.rows);
}

void MatMulRef(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y) {
  MatMulRef(x, n, WeightView{w, WeightType::kF32, out, in}, y);
}

void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool) {
  MatMul(x, n, WeightView{w, WeightType::kF32, out, in}, y, pool);
}

void MatMul(const float* x, int64_t n, const WeightView& w, float* y, ThreadPool& pool) {
  const int64_t in = w.cols, out = w.rows;
  if (n <= 0 || out <= 0) return;
  if (n == 1) {
    pool.ParallelFor(out, kGemvGrain, [&](int64_t r0, int64_t r1) { GemvRows(x, w, r0, r1, y); });
    return;
  }
  InitBlasSingleThreaded();
  const int64_t n_tiles = (out + kRowTile - 1) / kRowTile;
  // Tiles are claimed dynamically (all cost the same except the last); which thread computes a
  // tile never changes its sgemm arguments or values, so the result is deterministic.
  pool.ForEachItem(static_cast<int>(n_tiles), [&](int t, int) {
    // Upcast scratch for one 16-bit tile [kRowTile, in]; per thread, kept across calls.
    thread_local AlignedBuffer scratch;
    const int64_t r0 = t * kRowTile, nr = std::min(kRowTile, out - r0);
    const float* wt;
    if (w.type == WeightType::kF32) {
      wt = reinterpret_cast<const float*>(w.row(r0));
    } else {
      if (scratch.size() < kRowTile * in) scratch.Resize(kRowTile * in);
      WeightRowsToF32(w, r0, r0 + nr, scratch.data());
      wt = scratch.data();
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(nr),
                static_cast<int>(in), 1.0f, x, static_cast<int>(in), wt, static_cast<int>(in), 0.0f, y + r0,
                static_cast<int>(out));
  });
}

}  // namespace kvaudit
