// llama.cpp's repacked q4_0, iq4_nl and mxfp4 weight products on x86, emulated in scalar C++ bit for
// bit (engine=llama.cpp). llama.cpp's CPU backend repacks every q4_0, iq4_nl or mxfp4 weight of
// ne[1] % 8 == 0 rows into block_q4_0x8 / block_iq4_nlx8 / block_mxfp4x8 (weight repacking is on by default; the AVX2
// test in ggml_repack_get_optimal_repack_type, so AVX2 and AVX-512 builds alike; a tied output matrix too, which
// llama.cpp loads as its own MUL_MAT copy of token_embd), and forward_mul_mat
// (ggml-org/llama.cpp:ggml/src/ggml-cpu/repack.cpp@de3ff815, tensor_traits<block_q4_0, 8, 8,
// GGML_TYPE_Q8_0> and <block_iq4_nl, 8, 8, GGML_TYPE_Q8_0>) then multiplies it this way:
//   - the activation rows [0, n - n % 4) are quantized to q8_0 four at a time by
//     ggml_quantize_mat_q8_0_4x8 and go to ggml_gemm_{q4_0,iq4_nl}_8x8_q8_0;
//   - the last n % 4 rows are quantized by from_float (quantize_row_q8_0) and go, one at a time, to
//     ggml_gemv_{q4_0,iq4_nl}_8x8_q8_0 (so a decode, n = 1, is a gemv).
// The two quantizers' AVX2 branches (ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/repack.cpp@de3ff815
// and arch/x86/quants.c@de3ff815) run the same steps on a row — the same max tree, d = max/127,
// id = 127/max, round half to even, the same saturating packs — and the 4x8 one only interleaves
// four rows in its output, so every row gets quant/q8_activation.h QuantizeQ8_0RowX86's codes and d.
//
// Per output (gemv_q4_b32_8x8_q8_0_lut_avx and gemm_q4_b32_8x8_q8_0_lut_avx, arch/x86/repack.cpp):
// every block's integer dot is exact, then one f32 accumulator:
//   acc = 0; for each 32-element block b: acc = fma(f32(dot_b), d_w[b]·d_x[b], acc); y = acc
// (dot_b = Σ code·q8 over block b; code = nibble − 8 for q4_0, kvalues_iq4nl[nibble] for iq4_nl,
// kvalues_mxfp4[nibble] for mxfp4; d_w, d_x the fp16 scales as f32 (mxfp4's d_w its E8M0 half),
// multiplied in f32). No lane tree: an output is one lane of the
// kernels' registers from start to end. The gemm and the gemv form the same sequence, so unlike the
// repacked q4_K (q4_k_repack.h) the result does not depend on the batch. The AVX-512 gemm loop
// (AVX512BW/DQ) puts 16 outputs in a register instead of 8, the same sequence each; the gemvs have
// only their AVX2 code, which AVX-512 builds compile: one emulation serves both builds.
// Threads split the weight rows only (chunks of multiples of 8 rows): no output depends on the split.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/weight_matrix.h"
#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {

// n activation rows of k elements in q8_0 as llama.cpp's x86 quantizers make them (the gemm's and the
// gemv's rows alike, see above), expanded. The same rows feed every q8_0 vec_dot_type product of
// engine=llama.cpp (q4_0, q5_0, q8_0, iq4_nl; tinyBLAS and vec_dot too).
struct Q8_0Activations {
  int64_t n = 0, k = 0;
  std::vector<int8_t> codes;  // [n, k] the codes, in element order
  std::vector<float> d;       // [n, k / 32] each block's scale, fp16 -> f32
  const int8_t* Codes(int64_t i) const { return codes.data() + i * k; }
  const float* Scales(int64_t i) const { return d.data() + i * (k / kQK); }
};
// Rows are independent: with a pool (and n > 1) they are split across its threads, the same bytes.
Q8_0Activations QuantizeQ8_0Activations(const float* x, int64_t n, int64_t k, ThreadPool* pool = nullptr);

// Whether llama.cpp repacks this weight on x86: q4_0, iq4_nl or mxfp4 with rows % 8 == 0
// (ggml_repack_get_optimal_repack_type: mxfp4_8x8_q8_0 where AVX2 is).
bool Q4Repacked(const WeightView& w);

// Weight rows [r0, r1) of a repacked weight (Q4Repacked(w)) against every activation row:
// y[i·ldy + r] in the order above. Threads may share `a` and split [0, w.rows).
void Q4RepackedRows(const Q8_0Activations& a, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy);

// y [n, w.rows] = x [n, w.cols] · Wᵀ: the two steps above, every row.
void Q4RepackedMatMul(const float* x, int64_t n, const WeightView& w, float* y);

}  // namespace kvaudit::ggml
