// Dense f32 matrix products y[n, out] = x[n, in] · Wᵀ with W [out, in] row-major (the layout of
// every Hugging Face nn.Linear weight and of a GGUF weight read outermost-first).
//
// Determinism: results are bitwise independent of the thread count. n > 1 goes to OpenBLAS sgemm
// (single-threaded) over fixed 64-column tiles of W whose boundaries depend only on `out`, so every
// output element is produced by the same sgemm call whichever thread runs it. n == 1 (decode) is a
// memory-bound gemv: a hand-written AVX-512 kernel whose per-row arithmetic does not depend on which
// rows share a call.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace kvaudit {

// OpenBLAS must not start its own threads under ours (it would oversubscribe the 2 cores and make
// results depend on its thread count); MatMul calls this once.
void InitBlasSingleThreaded();

// y[n, out] = x[n, in] · Wᵀ   (x [n, in], w [out, in], y [n, out], all row-major, contiguous)
void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool);

// Rows [row0, row1) of y[out] = W[out, in] · x[in]. Scalar reference (double accumulation) and the
// SIMD kernel (scalar fallback without AVX-512); tests compare them.
void GemvRef(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y);
void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y);

// Scalar reference for MatMul (double accumulation), for tests.
void MatMulRef(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y);

}  // namespace kvaudit
