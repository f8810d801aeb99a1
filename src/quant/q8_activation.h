// llama.cpp CPU flash attention (ggml-cpu/ops.cpp, ggml_compute_forward_flash_attn_ext_f16_one_chunk)
// converts each f32 query row to the K type's vec_dot_type and scores with ggml's integer dot
// products: Q -> q8_0 for q4_0/q5_0/q8_0/iq4_nl K, Q -> q8_1 for q4_1/q5_1 K
// (type_traits_cpu in ggml-cpu.c). This file reproduces both steps for engine=llama.cpp.
//
// Rows are byte arrays of 32-element blocks: q8_0 [n/32 × 34 B] = {fp16 d, int8 qs[32]},
// q8_1 [n/32 × 36 B] = {fp16 d, fp16 s = fp16(d·Σqs), int8 qs[32]}. n % 32 == 0.
#pragma once

#include <cstdint>

#include "quant/ggml_blocks.h"

namespace kvaudit {

inline constexpr uint64_t Q8_0RowBytes(int64_t n) { return static_cast<uint64_t>(n / 32) * 34; }
inline constexpr uint64_t Q8_1RowBytes(int64_t n) { return static_cast<uint64_t>(n / 32) * 36; }

// ggml-quants.c quantize_row_q8_0_ref / quantize_row_q8_1_ref: d = amax/127, id = 1/d,
// q = roundf(x·id) (ties away from zero). Used by non-x86 scalar builds and by the q8_0 cache
// codec's reference (quant/q8_0.cc), whose bytes must be the reference quantizer's (docs/formats.md).
void QuantizeQ8_0RowRef(const float* x, uint8_t* dst, int64_t n);
void QuantizeQ8_1RowRef(const float* x, uint8_t* dst, int64_t n);

// ggml-cpu/arch/x86/quants.c quantize_row_q8_0 / quantize_row_q8_1 (AVX/AVX2 branch; AVX-512
// builds compile it too): d = amax/127, id = 127/amax (not 1/d), q = round half to EVEN
// (_mm256_round_ps(_MM_ROUND_NEAREST)); q8_1's s = fp16(d·Σq). amax in the branch's lane order
// with MAXPS's NaN rule, codes by cvtps2dq and saturating packs (a NaN or ±inf product: -128). This is what the CPU FA
// path applies to Q on x86 (and what from_float applies to q8_0 K/V rows written by ggml_set_rows).
void QuantizeQ8_0RowX86(const float* x, uint8_t* dst, int64_t n);
void QuantizeQ8_1RowX86(const float* x, uint8_t* dst, int64_t n);

// The x86 q8_0 / q8_1 rows above in expanded form, as llama.cpp's integer dots read them: codes [n],
// d [n/32] (fp16 -> f32) and, q8_1 only, m [n/32] = s = fp16(d·Σq) (q8_0 leaves m untouched).
// The one conversion of activations (weights, engine=llama.cpp) and queries (its flash attention).
// On the AVX2 and AVX-512 paths the AVX2 branch's own instructions (quant/q8_activation_simd.cc);
// the scalar twin computes each step as those instructions do (MAXPS's operand order on a NaN,
// cvtps2dq's INT32_MIN, the packs' saturation), so the two agree bit for bit on every input.
void QuantizeQ8RowX86Codes(const float* x, int64_t n, bool q8_1, ggml::BlockCodes out);
void QuantizeQ8RowX86CodesScalar(const float* x, int64_t n, bool q8_1, ggml::BlockCodes out);

// ggml-quants.c quantize_row_q8_K_ref, which the x86 quantize_row_q8_K calls (arch/x86/quants.c):
// the activation rows of every K-quant weight product. Per 256 values: `max` = the value of largest
// magnitude (the first on ties), iscale = -127/max, q = nearest_int(iscale·x) (round half to even)
// capped at 127, bsums = Σq per 16, d = 1/iscale; an all-zero block gives d = 0 and zero codes.
// n % 256 == 0; dst [n/256] blocks.
void QuantizeQ8_KRow(const float* x, ggml::BlockQ8_K* dst, int64_t n);

// What the llama.cpp CPU flash-attention path uses on x86 (the machine the peer figures come from).
inline void QuantizeQ8_0Row(const float* x, uint8_t* dst, int64_t n) { QuantizeQ8_0RowX86(x, dst, n); }
inline void QuantizeQ8_1Row(const float* x, uint8_t* dst, int64_t n) { QuantizeQ8_1RowX86(x, dst, n); }

// ggml_vec_dot_<K>_<Q> (ggml-cpu/quants.c *_generic): x = K row in its block format, y = the
// quantized Q row; exact int32 sum per block, then f32 sumf += sumi·(d_x·d_y) [+ m_x·s_y].
// Returns Σ over blocks. See q8_activation.cc for the accumulation order.
float VecDotQ4_0Q8_0(const uint8_t* x, const uint8_t* y, int64_t n);
float VecDotQ4_1Q8_1(const uint8_t* x, const uint8_t* y, int64_t n);
float VecDotQ5_0Q8_0(const uint8_t* x, const uint8_t* y, int64_t n);
float VecDotQ5_1Q8_1(const uint8_t* x, const uint8_t* y, int64_t n);
float VecDotQ8_0Q8_0(const uint8_t* x, const uint8_t* y, int64_t n);
float VecDotIq4NlQ8_0(const uint8_t* x, const uint8_t* y, int64_t n);

}  // namespace kvaudit
