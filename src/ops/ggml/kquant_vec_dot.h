// llama.cpp's x86 vec_dot of a q2_K, q3_K, q4_K, q5_K or iq4_xs weight row with its q8_K activation
// row, in scalar C++ with the AVX2 branch's integer lanes and float roundings (engine=llama.cpp;
// the q6_K twin is DotQ6_KQ8_K in vec_dot.h). Sources: ggml-org/llama.cpp:
// ggml/src/ggml-cpu/arch/x86/quants.c@de3ff815 (ggml_vec_dot_q2_K_q8_K, _q3_K_, _q4_K_, _q5_K_,
// ggml_vec_dot_iq4_xs_q8_K: the AVX2 branches; none of the five has an AVX-512 branch, so
// AVX-512 builds compile the same code).
//
// Which path a build takes (ggml-org/llama.cpp:ggml/src/ggml-cpu/repack.cpp@de3ff815,
// ggml_repack_get_optimal_repack_type; ggml/src/ggml-cpu/llamafile/sgemm.cpp@de3ff815,
// llamafile_sgemm): tinyBLAS takes none of these types, and an AVX2 build repacks none of them
// but q4_K of ne[1] % 8 == 0 rows (q4_k_repack.h), so every other product, prefill or decode, is
// this vec_dot, one output at a time, except iq4_xs in batches of 8 or more (the IQ panel, below).
// An AVX-512 build also repacks q2_K of ne[1] % 8 == 0 rows (q2_K_8x8 gemm/gemv), which these
// functions do not emulate.
//
// Common shape: per 256-element super-block, 8 int32 lanes; lane m sums, over the 8 chunks of 32
// elements, scale(chunk, m) × (the 4 code·q8 products of elements 4m..4m+3 of the chunk), with
// scale(chunk, m) the scale of the chunk's 16-element (q2_K, q3_K) or 32-element group; then
// acc_m = fma(d_x·fp16(d_w), f32(lane_m), acc_m) per block and hsum_float_8 (Hsum8) at the end.
// Every integer step is exact (no maddubs saturation, no epi16 wrap: bounds in the .cc), and
// every f32(lane) is exact (|lane| < 2^24). The types differ in their mins:
//   q2_K: 8 more lanes, Σ over pairs of 16-groups of min·bsum, fused into acc before the scales'
//         fma of the same block: acc_m = fma(-d_x·fp16(dmin), f32(minsum_m), acc_m);
//   q4_K: 4 lanes of Σ min·(bsum pairs) in their own f32 accumulator (fma with -d_x·fp16(dmin)),
//         reduced (a0+a2)+(a1+a3) and added after Hsum8(acc);
//   q5_K: the same integers summed to one int per block, summs = fma(-d_x·fp16(dmin), f32(Σ),
//         summs) (GCC contracts the C `summs += dmin * int`), added after Hsum8(acc);
//   q3_K, iq4_xs: no mins (q3_K's codes are signed, low 2 bits − 4 where the high bit is clear;
//         iq4_xs's are kvalues_iq4nl, multiplied by sign transfer: |v| · (q8 signed by v)).
// w: one weight row of nb blocks, x: its q8_K activation row [nb blocks]. Finite inputs.
#pragma once

#include <cstdint>

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {

// Each is a SIMD kernel of each kernel path; its scalar twin (...Scalar) gives the same bits.
float DotQ2_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ3_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
// The vec_dot path only: llama.cpp runs q4_K of ne[1] % 8 == 0 rows through the repacked gemm/gemv.
float DotQ4_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ5_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotIq4XsQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ2_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ3_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ4_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ5_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotIq4XsQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);

// iq4_xs in a batch: an AVX2 build (with or without AVX-512) sends a MUL_MAT of an iq4_xs weight of
// ne[1] % 8 == 0 rows against n >= 8 activation rows to the IQ panel gemm instead
// (ggml-org/llama.cpp:ggml/src/ggml-cpu/iqp.cpp@de3ff815: ggml_cpu_iqp_supports_mul_mat,
// iqp_decode_iq4_xs, iqp_gemm_tile_4 for rows [0, n - n % 4), iqp_gemv_8x8_q8_K for the rest; off
// only under the GGML_NO_IQ_PANEL environment variable). Per output, gemm and gemv alike: one int32
// per super-block, S = Σ over the 32-element sub-blocks of (ls − 32)·Σ kvalues·q8 (exact; the VNNI
// builds' +128 bias cancels exactly), then acc = fma(f32(S), fp16(d_w)·d_x, acc); no hsum. f32(S)
// rounds to nearest even where |S| > 2^24.
inline constexpr int64_t kIqPanelMinBatch = 8;  // GGML_IQP_MIN_BATCH
inline constexpr int64_t kIqPanelRows = 8;      // IQP_NB_ROWS: ne[1] % 8 == 0
float DotIq4XsQ8_KPanel(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotIq4XsQ8_KPanelScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);

}  // namespace kvaudit::ggml
