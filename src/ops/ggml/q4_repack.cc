// Scalar emulation of llama.cpp's repacked q4_0 / iq4_nl / mxfp4 products on x86; the dispatch and the
// per-output order are in the header. Sources:
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/repack.cpp@de3ff815 (ggml_repack_get_optimal_repack_type,
//     forward_mul_mat, make_block_q4_0x8, make_block_iq4_nlx8)
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/repack.cpp@de3ff815 (ggml_quantize_mat_q8_0_4x8,
//     gemv_q4_b32_8x8_q8_0_lut_avx, gemm_q4_b32_8x8_q8_0_lut_avx, mul_sum_i8_pairs_acc_int32x8)
//   ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/x86/quants.c@de3ff815 (quantize_row_q8_0)
#include "ops/ggml/q4_repack.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"
#include "quant/quant_type.h"

namespace kvaudit::ggml {
namespace {

constexpr int kInterleavedRows = 8;  // block_q4_0x8 / block_iq4_nlx8: the repack needs rows % 8 == 0

// Why a plain int32 sum gives the kernels' integer: make_block_q4_0x8 flips each nibble's top bit
// and the kernels' lookup table sign-extends it back (nibble − 8); iq4_nl's table is kvalues_iq4nl
// (−127..113), mxfp4's kvalues_mxfp4 (−12..12), its scale the E8M0 half (col_scale_f32 through
// GGML_CPU_E8M0_TO_FP32_HALF) where the others load fp16. mul_sum_i8_pairs_acc_int32x8 takes |one operand| and the
// other with its sign
// (_mm256_sign_epi8: q8 codes are in [−127, 127], never −128, so no sign flip wraps), maddubs adds
// two products into an int16 lane (|2·127·127| = 32258: never saturates) and madd adds those
// pairs into int32 (AVX-VNNI's dpbusd / dpbssd form the same exact sums). So each block's dot is
// the exact Σ code·q8, |Σ| <= 32·127·127 < 2^24, and its conversion to f32 is exact too.
static_assert(2 * 127 * 127 < 32768, "a maddubs lane of the q4_0/iq4_nl kernels cannot saturate");
static_assert(32 * 127 * 127 < (1 << 24), "a block's dot converts to f32 exactly");

// One output: the kernels' fma chain over the blocks (acc_row = _mm256_fmadd_ps(cvtepi32_ps(iacc),
// _mm256_mul_ps(col_scale_f32, row_scale_f32), acc_row), one lane). wc, ac: codes [nb·32];
// wd, ad: the blocks' scales [nb].
float RepackedDot(const int8_t* wc, const float* wd, const int8_t* ac, const float* ad, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t dot = 0;
    for (int l = 0; l < kQK; ++l) dot += int32_t{wc[b * kQK + l]} * ac[b * kQK + l];
    acc = std::fma(static_cast<float>(dot), wd[b] * ad[b], acc);
  }
  return acc;
}

}  // namespace

Q8_0Activations QuantizeQ8_0Activations(const float* x, int64_t n, int64_t k, ThreadPool* pool) {
  KV_CHECK(k % kQK == 0 && n >= 0);
  Q8_0Activations a;
  a.n = n;
  a.k = k;
  a.codes.resize(static_cast<size_t>(n * k));
  a.d.resize(static_cast<size_t>(n * (k / kQK)));
  ForRows(pool, n, [&](int64_t i0, int64_t i1) {
    std::vector<float> unused(static_cast<size_t>(k / kQK));  // [k/32] q8_0 has no second field
    for (int64_t i = i0; i < i1; ++i) {
      // forward_mul_mat's 4x8 quantizer (gemm rows) and from_float (gemv rows) alike: the header.
      QuantizeQ8RowX86Codes(x + i * k, k, false, {a.codes.data() + i * k, a.d.data() + i * (k / kQK), unused.data()});
    }
  });
  return a;
}

bool Q4Repacked(const WeightView& w) {
  const bool type = w.type == QuantType::kQ4_0 || w.type == QuantType::kIQ4_NL || w.type == QuantType::kMXFP4;
  return type && w.rows % kInterleavedRows == 0;
}

void Q4RepackedRows(const Q8_0Activations& a, const WeightView& w, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  KV_CHECK_MSG(Q4Repacked(w), "Q4RepackedRows: llama.cpp repacks only q4_0, iq4_nl and mxfp4 weights of rows % 8 == 0");
  KV_CHECK(a.k == w.cols);
  const int64_t k = w.cols, nb = k / kQK;
  std::vector<int8_t> codes(static_cast<size_t>(k));    // [k] one weight row's codes (the kernels' table values)
  std::vector<float> d(static_cast<size_t>(nb)), m(d);  // [k/32] its block scales (m unused)
  for (int64_t r = r0; r < r1; ++r) {
    GetQuantTraits(w.type).to_codes(w.row(r), k, {codes.data(), d.data(), m.data()});
    for (int64_t i = 0; i < a.n; ++i) y[i * ldy + r] = RepackedDot(codes.data(), d.data(), a.Codes(i), a.Scales(i), nb);
  }
}

void Q4RepackedMatMul(const float* x, int64_t n, const WeightView& w, float* y) {
  Q4RepackedRows(QuantizeQ8_0Activations(x, n, w.cols), w, 0, w.rows, y, w.rows);
}

}  // namespace kvaudit::ggml
