#include "ops/matmul.h"

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <mutex>


namespace kvaudit {

namespace {
// Width of the W column tiles for sgemm. 64 keeps the 2-thread split of the smallest projection
// (384 outputs = 6 tiles) balanced while each call still amortises packing x over 64 x in MACs.
constexpr int64_t kColTile = 64;
// Rows of W per gemv work item (decode): 64 rows x 384 floats = 96 KiB, large enough to amortise
// the pool hand-off, small enough to balance 2 threads on every projection.
constexpr int64_t kGemvGrain = 64;
}  // namespace

void InitBlasSingleThreaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void GemvRef(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  for (int64_t r = row0; r < row1; ++r) {
    const float* wr = w + r * in;
    double acc = 0;
    for (int64_t i = 0; i < in; ++i) acc += static_cast<double>(wr[i]) * x[i];
    y[r] = static_cast<float>(acc);
  }
}

void MatMulRef(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y) {
  for (int64_t t = 0; t < n; ++t) GemvRef(x + t * in, in, w, 0, out, y + t * out);
}

#if defined(__AVX512F__)
namespace {
// One row's dot product, the same arithmetic whether the row is handled alone or in a group of 4:
// 16-float chunks alternate between two accumulators (even/odd), the masked tail goes into the
// even one, and the two are added then reduced. GemvRows4 interleaves four of these for memory-
// level parallelism without changing any row's sum.
inline float DotRow(const float* x, const float* wr, int64_t in) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= in; i += 32) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i), _mm512_loadu_ps(x + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i + 16), _mm512_loadu_ps(x + i + 16), a1);
  }
  if (i + 16 <= in) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i), _mm512_loadu_ps(x + i), a0);
    i += 16;
  }
  if (i < in) {
    const __mmask16 m = static_cast<__mmask16>((1u << (in - i)) - 1);
    a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wr + i), _mm512_maskz_loadu_ps(m, x + i), a0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

inline void DotRows4(const float* x, const float* w, int64_t in, float* y) {
  const float* w0 = w;
  const float* w1 = w + in;
  const float* w2 = w + 2 * in;
  const float* w3 = w + 3 * in;
  __m512 a00 = _mm512_setzero_ps(), a01 = _mm512_setzero_ps(), a10 = _mm512_setzero_ps(),
         a11 = _mm512_setzero_ps(), a20 = _mm512_setzero_ps(), a21 = _mm512_setzero_ps(),
         a30 = _mm512_setzero_ps(), a31 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= in; i += 32) {
    const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
    a00 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), x0, a00);
    a01 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i + 16), x1, a01);
    a10 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), x0, a10);
    a11 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i + 16), x1, a11);
    a20 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), x0, a20);
    a21 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i + 16), x1, a21);
    a30 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), x0, a30);
    a31 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i + 16), x1, a31);
  }
  if (i + 16 <= in) {
    const __m512 x0 = _mm512_loadu_ps(x + i);
    a00 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), x0, a00);
    a10 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), x0, a10);
    a20 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), x0, a20);
    a30 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), x0, a30);
    i += 16;
  }
  if (i < in) {
    const __mmask16 m = static_cast<__mmask16>((1u << (in - i)) - 1);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, x + i);
    a00 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + i), x0, a00);
    a10 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w1 + i), x0, a10);
    a20 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w2 + i), x0, a20);
    a30 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w3 + i), x0, a30);
  }
  y[0] = _mm512_reduce_add_ps(_mm512_add_ps(a00, a01));
  y[1] = _mm512_reduce_add_ps(_mm512_add_ps(a10, a11));
  y[2] = _mm512_reduce_add_ps(_mm512_add_ps(a20, a21));
  y[3] = _mm512_reduce_add_ps(_mm512_add_ps(a30, a31));
}
}  // namespace

void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  int64_t r = row0;
  for (; r + 4 <= row1; r += 4) DotRows4(x, w + r * in, in, y + r);
  for (; r < row1; ++r) y[r] = DotRow(x, w + r * in, in);
}
#else
// Portable build: float accumulation in a fixed order, vectorisable by the compiler only where
// that keeps the order (it does not reassociate without -ffast-math).
void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  for (int64_t r = row0; r < row1; ++r) {
    const float* wr = w + r * in;
    float acc = 0;
    for (int64_t i = 0; i < in; ++i) acc += wr[i] * x[i];
    y[r] = acc;
  }
}
#endif

void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool) {
  if (n <= 0 || out <= 0) return;
  if (n == 1) {
    pool.ParallelFor(out, kGemvGrain, [&](int64_t r0, int64_t r1) { GemvRows(x, in, w, r0, r1, y); });
    return;
  }
  InitBlasSingleThreaded();
  const int64_t n_tiles = (out + kColTile - 1) / kColTile;
  // Tiles are claimed dynamically (causal-free, all tiles cost the same except the last); which
  // thread computes a tile never changes its sgemm arguments, so the result is deterministic.
  std::atomic<int64_t> next{0};
  auto work = [&](int) {
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < n_tiles;) {
      const int64_t c0 = t * kColTile, nc = std::min(kColTile, out - c0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(nc),
                  static_cast<int>(in), 1.0f, x, static_cast<int>(in), w + c0 * in, static_cast<int>(in),
                  0.0f, y + c0, static_cast<int>(out));
    }
  };
  if (pool.size() == 1 || n_tiles == 1) {
    work(0);
  } else {
    pool.RunOnAll(work);
  }
}

}  // namespace kvaudit
