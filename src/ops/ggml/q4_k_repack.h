// llama.cpp's repacked q4_K weight product on x86, emulated bit for bit (SIMD integer sums and f32 steps)
// (engine=llama.cpp). llama.cpp's CPU backend repacks every q4_K weight of ne[1] % 8 == 0 rows into
// block_q4_Kx8 (weight repacking is on by default; the AVX2 test in
// ggml_repack_get_optimal_repack_type, so AVX2 and AVX-512 builds alike), and forward_mul_mat
// (ggml-org/llama.cpp:ggml/src/ggml-cpu/repack.cpp@de3ff815, tensor_traits<block_q4_K, 8, 8,
// GGML_TYPE_Q8_K>) then multiplies it this way:
//   - the activation rows [0, n - n % 4) are quantized to q8_K four at a time by
//     ggml_quantize_mat_q8_K_4x8 and go to ggml_gemm_q4_K_8x8_q8_K;
//   - the last n % 4 rows are quantized by quantize_row_q8_K (= quantize_row_q8_K_ref on x86) and
//     go, one at a time, to ggml_gemv_q4_K_8x8_q8_K (so a decode, n = 1, is a gemv).
// Threads split the weight rows only (chunks of multiples of 8 rows), and no output's arithmetic
// depends on the other rows of its group of 8 or on the other activation rows: y[i][r] is a
// function of activation row i, weight row r and whether i < n - n % 4.
//
// Per output (ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/repack.cpp@de3ff815): every integer
// sum is exact, then f32 as
//   gemm: for each super-block b, for each pair p of sub-blocks (4 per super-block):
//           acc  = fma(f32(Σ_{j∈p} sc_j·dot_j), d_w[b]·d_x[b], acc)
//           accm = fma(f32(Σ_{j∈p} m_j·sum_j),  dmin_w[b]·d_x[b], accm)
//   gemv: for each super-block b: the same with the sums over all 8 sub-blocks (one fma per block)
//   y = acc - accm
// (dot_j = Σ nibble·q8 over sub-block j, sum_j = Σ q8 over it, sc/m its 6-bit scale and min).
// The AVX-512 gemm and the AVX2 gemm form the same per-output sequence (they differ only in how
// many outputs share a register), and the gemv and the 4x8 quantizer have only an AVX2 kernel,
// which AVX-512 builds compile too: one emulation serves both builds. Finite activations only.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/weight_matrix.h"

namespace kvaudit::ggml {

// block_q4_K as the kernels walk it, and the groups block_q4_Kx8 interleaves.
inline constexpr int kQ4KSubBlock = 32;              // elements per sub-block (one scale, one min)
inline constexpr int kQ4KSubBlocks = 8;              // sub-blocks per super-block (QK_K / 32)
inline constexpr int kQ4KPairs = kQ4KSubBlocks / 2;  // the gemm's `sb` loop: two sub-blocks a step
inline constexpr int kQ4KGemmRowGroup = 4;           // forward_mul_mat's activation rows per gemm call
inline constexpr int kQ4KInterleavedRows = 8;        // weight rows per block_q4_Kx8

// An activation row in q8_K as the repacked kernels read it.
struct Q8KActivationRow {
  std::vector<float> d;           // [k / 256] the block scale
  std::vector<int8_t> qs;         // [k] the codes, in element order
  std::vector<int32_t> sub_sums;  // [k / 32] Σ of each sub-block's 32 codes (the bsums pairs)
};

// The n activation rows as forward_mul_mat quantizes them: rows [0, n_gemm) by the 4x8 quantizer
// (the gemm's), the last n % 4 by quantize_row_q8_K (the gemv's).
struct Q4KActivations {
  std::vector<Q8KActivationRow> rows;  // [n]
  int64_t n_gemm = 0;
};
// Rows are independent: with a pool (and n > 1) they are split across its threads, the same bytes.
Q4KActivations QuantizeForQ4KRepacked(const float* x, int64_t n, int64_t k, ThreadPool* pool = nullptr);

// Weight rows [r0, r1) of a q4_K weight (w.type == QuantType::kQ4_K, w.rows % 8 == 0) against every
// activation row: y[i·ldy + r], each output in its kernel's order (the gemm's for i < n_gemm, else
// the gemv's). Threads may share `a` and split [0, w.rows): no output depends on the split.
void Q4KRepackedRows(const Q4KActivations& a, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy);

// y [n, w.rows] = x [n, w.cols] · Wᵀ: the two steps above, every row.
void Q4KRepackedMatMul(const float* x, int64_t n, const WeightView& w, float* y);

// quantize_row_q8_K_ref (quant/q8_activation.h QuantizeQ8_KRow) in this form. An all-zero block gets
// d = 0 and sums 0 (llama.cpp leaves its bsums unwritten; they only ever meet d = 0, so at most the
// sign of a zero output could differ).
void QuantizeQ8KRowRef(const float* x, int64_t k, Q8KActivationRow* out);

// One row of ggml_quantize_mat_q8_K_4x8 (x86/repack.cpp, its AVX2 branch): the same codes and |d|,
// but a positive element equal to max |x| wins the sign (d < 0) where the reference takes the first
// such element. The products d·q, hence every output, are bitwise the same either way.
void QuantizeQ8KRow4x8(const float* x, int64_t k, Q8KActivationRow* out);

// One super-block of QuantizeQ8KRow4x8: codes q [256] of x [256], returns d. A SIMD kernel of each
// kernel path (the AVX2 branch's own instructions); the scalar twin gives the same codes and d.
float QuantizeBlock4x8(const float* x, int8_t* q);
float QuantizeBlock4x8Scalar(const float* x, int8_t* q);

// One group of block_q4_Kx8 (up to 8 weight rows: row l's q4_K blocks at rows[l], l < count)
// against n_x <= 4 activation rows x[0..n_x) (nb super-blocks): y[a·ldy + l] for l < count, each in
// the kernels' order. Per super-block b, each row's exact integer sums per step (gemm,
// ggml_gemm_q4_K_8x8_q8_K: steps = 4, the pairs of sub-blocks of its `sb` loop; gemv,
// ggml_gemv_q4_K_8x8_q8_K's AVX2 branch: steps = 1, the whole super-block): isum = Σ sc·dot and
// imin = Σ m·sum over the step's sub-blocks (dot = Σ nibble·code of a sub-block, sum = Σ code:
// x.sub_sums); then the f32 steps with the 8 rows in 8 lanes, as the kernels' acc_rows /
// acc_min_rows hold them: scale = d_w[b]·d_x[b] and scale_min = dmin_w[b]·d_x[b], per step acc =
// fma(f32(isum), scale, acc) and acc_min likewise; y = acc - acc_min. No output depends on the other
// activation rows (the gemm's 4 rows share only the weight's unpacking). Lanes past count are
// computed from zeros and not written. A SIMD kernel of each kernel path; the scalar twin gives the
// same bits.
// following (null, or [8] with nulls) names the rows of the group computed next: the SIMD kernel
// prefetches them block by block (llama.cpp reads block_q4_Kx8 as one stream; 8 row streams need the
// help), which changes no bit.
void Q4KGroupRows(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int n_x, int64_t nb, int steps,
                  float* y, int64_t ldy, const uint8_t* const following[8] = nullptr);
void Q4KGroupRowsScalar(const uint8_t* const rows[8], int count, const Q8KActivationRow* x, int n_x, int64_t nb,
                        int steps, float* y, int64_t ldy);

}  // namespace kvaudit::ggml
