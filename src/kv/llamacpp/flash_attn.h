// Arithmetic primitives of llama.cpp's CPU flash attention (ggml/src/ggml-cpu/ops.cpp,
// ggml_compute_forward_flash_attn_ext_f16_one_chunk; notes §2.2), used by kv/llamacpp/cache.cc.
// Each SIMD kernel has a scalar twin with the same operations in the same order (bit-identical;
// tests/unit/kv_llamacpp_cache_test.cc holds them together).
//
// Scores against a quantized K row follow the x86 AVX2 branch of ggml-cpu/arch/x86/quants.c
// (AVX-512 builds compile that branch): per 32-element block, 8 int32 lanes each summing 4
// consecutive code products (mul_sum_i8_pairs_float: maddubs + madd), converted to f32 and
// accumulated as acc = fma(fp16(d_k)·fp16(d_q), lanes, acc); the 8 lanes are reduced with
// hsum_float_8. q4_1/q5_1 (× q8_1) add summs = Σ fma(m_k, s_q) after the reduction;
// iq4_nl alternates two accumulators between even and odd blocks and adds them before hsum.
// (q4_0/q8_0 text verified; q4_1/q5_x/iq4_nl structure as read from the same file's AVX2 branches.)
#pragma once

#include <cstdint>

#include "kv/formats/format_table.h"
#include "ops/ggml/vec_dot.h"

namespace kvaudit::llamacpp {

// How the 8 lane sums of the blocks are combined into one score (see the file comment), and the
// K row's codes: both from the format's llama.cpp traits (kv/formats/format_table.h).
inline ggml::VecDotKind DotKindOf(KvFormat k) { return Format(k).ggml().vec_dot; }      // k: a block format
inline bool UsesQ8_1(KvFormat k) { return DotKindOf(k) == ggml::VecDotKind::kAffine; }  // else Q -> q8_0
// K row bytes of block format k (one head row, hd elements) -> expanded codes.
void ExpandKRow(KvFormat k, const uint8_t* row, int hd, ggml::BlockCodes out);
// f32 Q row -> q8_0 / q8_1 with the x86 from_float (quant/q8_activation.h QuantizeQ8_*RowX86) -> expanded.
void ConvertQRow(KvFormat k, const float* q, int hd, ggml::BlockCodes out);

// The score (before × kq_scale) of one K row against one Q row, both expanded, is
// ops/ggml/vec_dot.h DotQ8Blocks (nb = hd / 32 blocks), the weight products' integer dot.
// (Scores against f16 K rows: ops/ggml/vec_dot.h VecDotF16, the weight products' dot.)

// V accumulation (ggml_vec_mad_f32 / ggml_vec_scale_f32: acc = fma(v, s, acc) / acc *= s) and the
// f16-accumulator twins (ggml_vec_mad_f16 / ggml_vec_scale_f16: the same, rounded to fp16 RNE after
// every call). hd % 16 == 0 (AVX-512) or hd % 8 == 0 (AVX2) for the SIMD versions (else they defer
// to scalar).
void MadF32(float* acc, const float* v, float s, int hd);
void ScaleF32(float* acc, float s, int hd);
void MadF16(float* acc, const float* v, float s, int hd);
void ScaleF16(float* acc, float s, int hd);
// MadF32 for keys j = 0 .. kn − 1 in order, skipping p[j] == 0 (a masked or underflowed key):
// acc [hd] += p[j] · v[j·hd ..]; per element the same fmas in the same order, with acc held in
// registers across the keys (the tiled path's P·V for one query row).
void MadRowsF32(float* acc, const float* v, const float* p, int kn, int hd);
void MadRowsF32Scalar(float* acc, const float* v, const float* p, int kn, int hd);
void MadF32Scalar(float* acc, const float* v, float s, int hd);
void ScaleF32Scalar(float* acc, float s, int hd);
void MadF16Scalar(float* acc, const float* v, float s, int hd);
void ScaleF16Scalar(float* acc, float s, int hd);

// Rounds x[0..n) to f16 / bf16 values in place (RNE): Q for f16 / bf16 K on the one_chunk path.
void RoundToF16(float* x, int n);
void RoundToBF16(float* x, int n);

}  // namespace kvaudit::llamacpp
