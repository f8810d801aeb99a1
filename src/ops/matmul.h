// Dense matrix products y[n, out] = x[n, in] · Wᵀ with W [out, in] row-major (the layout of every
// Hugging Face nn.Linear weight and of a GGUF weight read outermost-first). W is f32, bf16 or f16
// (ops/weight_matrix.h); x and y are f32 and every product is accumulated in f32 on exactly
// upcast weights, so a 16-bit W gives the same arithmetic as the same W upcast to f32.
//
// Determinism: results are bitwise independent of the thread count. n > 1 goes to OpenBLAS sgemm
// (single-threaded) over fixed 64-row tiles of W whose boundaries depend only on `out`, so every
// output element is produced by the same sgemm call whichever thread runs it; a 16-bit tile is
// first upcast into per-thread f32 scratch (64 x in floats, amortised over the n tokens). n == 1
// (decode) is a memory-bound gemv: an AVX-512 kernel reading W in its stored dtype, whose per-row
// arithmetic does not depend on which rows share a call.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

// OpenBLAS must not start its own threads under ours (it would oversubscribe the 2 cores and make
// results depend on its thread count); MatMul calls this once.
void InitBlasSingleThreaded();

// y[n, w.rows] = x[n, w.cols] · Wᵀ   (x, y row-major, contiguous)
void MatMul(const float* x, int64_t n, const WeightView& w, float* y, ThreadPool& pool);
// f32 convenience form: W [out, in].
void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool);

// Rows [row0, row1) of y[w.rows] = W · x[w.cols]. GemvRef: scalar reference (double accumulation);
// GemvRows: the SIMD kernel (scalar f32 fallback without AVX-512). Tests compare them.
void GemvRef(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y);
void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y);
// f32 forms: W [*, in].
void GemvRef(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y);
void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y);

// Scalar reference for MatMul (double accumulation), for tests.
void MatMulRef(const float* x, int64_t n, const WeightView& w, float* y);
void MatMulRef(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y);

}  // namespace kvaudit
