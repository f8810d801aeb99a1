// Dense matrix products y[n, out] = x[n, in] · Wᵀ with W [out, in] row-major (the layout of every
// Hugging Face nn.Linear weight and of a GGUF weight read outermost-first). W is f32, bf16, f16 or
// a ggml block format (ops/weight_matrix.h); x and y are f32 and every product is accumulated in
// f32 on the exact f32 value of each weight (16-bit upcast, blocks dequantized with ggml's
// arithmetic right before use), so any W gives the arithmetic of the same W converted to f32.
//
// Batch invariance (docs/architecture.md): every output element y[t, j] = x_t · w_j is the
// canonical dot of ops/dot.h (16 lane accumulators over k ascending, one fixed reduction tree),
// whatever n is, whichever kernel computes it and whichever thread runs it. So row t of a prefill
// call is bitwise the result of feeding x_t alone (decode), and results are bitwise thread-count
// independent. Kernels: n > 1 runs a register-blocked tile of 4 x rows × 4 W rows (16 accumulators,
// one transposed reduction); n == 1 runs 16 W rows at a time against x (a memory-bound gemv).
// Threads split the output columns (W rows) only, never k.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

// y[n, w.rows] = x[n, w.cols] · Wᵀ   (x, y row-major, contiguous)
void MatMul(const float* x, int64_t n, const WeightView& w, float* y, ThreadPool& pool);
// The same over a matrix of parts stacked by rows: y[n, w.rows()] (columns of each part in turn).
void MatMul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool);
void MatMulParts(const float* x, int64_t n, const WeightView* parts, int n_parts, float* y, ThreadPool& pool);
// f32 convenience form: W [out, in].
void MatMul(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y, ThreadPool& pool);

// Rows [row0, row1) of y[w.rows] = W · x[w.cols] with the decode kernel (bitwise MatMul's n == 1).
void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y);
void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y);

// Scalar emulation of the canonical order (std::fma lanes + the same tree), one output at a time:
// bitwise equal to MatMul on every build (whose kernels without AVX-512 are the same operations in
// portable 4 x 4 tiles, ops/matmul.cc). For tests.
void MatMulCanonicalRef(const float* x, int64_t n, const WeightView& w, float* y);

// Double-accumulation references, for accuracy tests.
void GemvRef(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y);
void GemvRef(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y);
void MatMulRef(const float* x, int64_t n, const WeightView& w, float* y);
void MatMulRef(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y);

}  // namespace kvaudit
