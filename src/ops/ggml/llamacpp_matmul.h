// Weight products as llama.cpp's CPU backend computes them (engine=llama.cpp): the activation rows
// are converted to the weight type's vec_dot_type first (type_traits_cpu in ggml-cpu.c: f16 for
// f16 weights, q8_0 for q4_0/q5_0/q8_0/iq4_nl/mxfp4, q8_1 for q4_1/q5_1, q8_K for the K-quants and
// iq4_xs), then each output is summed in the order of the kernel llama.cpp dispatches to for that
// type and batch (ggml_compute_forward_mul_mat: tinyBLAS for a batch of two or more rows where
// llamafile_sgemm takes the type, else vec_dot; the repacked gemm/gemv of q4_0, iq4_nl and q4_K
// weights of rows % 8 == 0 (mxfp4's too); iq4_xs's IQ panel gemm, ops/ggml/kquant_vec_dot.h). Emulated build:
// ops/ggml/vec_dot.h kEmulatedBuild.
//
// So the engine=llama.cpp forward pass is llama.cpp's arithmetic, not only its attention's: its
// logits carry llama.cpp's activation rounding (a q8_0 activation row loses ~2^-8 of its largest
// value), which the native engine's exact f32 products do not. Like llama.cpp, this is not batch
// invariant for f32/f16 weights and for iq4_nl weights that are not repacked (tinyBLAS and vec_dot
// sum in different orders), nor for repacked q4_K weights (their gemm and gemv differ likewise) or
// iq4_xs (its panel for batches of 8 or more rows).
//
// Types outside Covers() (bf16) keep kvaudit's exact f32 products (the "measured as" line of
// a llama.cpp target lists the covered types; docs/architecture.md "llama.cpp's arithmetic").
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/ggml/vec_dot.h"
#include "ops/weight_matrix.h"

namespace kvaudit::ggml {

// Whether the products of this weight are llama.cpp's (else kvaudit's exact ones).
bool Covers(const WeightView& w);

// y [n, w.rows()] = x [n, w.cols()] · Wᵀ, part by part (columns of each part in turn). Bitwise the
// same for any thread count: threads split output rows, never a sum.
void LlamaCppMatMul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool);

// The products of MUL_MAT_ID (a mixture of experts' expert weights): llama.cpp computes each routed
// activation row alone — ggml_compute_forward_mul_mat_id calls vec_dot per (weight row, activation
// row), the repacked types' forward_mul_mat_id the gemv per activation row
// (ggml-org/llama.cpp:ggml/src/ggml-cpu/ggml-cpu.c and repack.cpp@de3ff815) — never a batch
// kernel, so y[t] = LlamaCppMatMul(x[t], 1, w) for each of the n rows.
void LlamaCppMatMulEachRow(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool);

}  // namespace kvaudit::ggml
