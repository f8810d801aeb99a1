// The orders in which llama.cpp's CPU backend sums one weight row against one activation row on
// x86, each written out in scalar C++ with the same roundings: which products fuse into one FMA, how many lane
// accumulators there are, and the tree that adds the lanes. They are emulations, not kernels: every
// kernel path of kvaudit computes them with the same operations, so they give the same bits anywhere.
//
// Sources (ggml-org/llama.cpp @ de3ff815): ggml/src/ggml-cpu/vec.cpp (ggml_vec_dot_f32/_f16 with the
// AVX / AVX-512 mappings of simd-mappings.h: GGML_F32x8 / GGML_F32x16 and their REDUCE),
// ggml/src/ggml-cpu/llamafile/sgemm.cpp (tinyBLAS: one accumulator per output, its hsum;
// tinyBLAS_Q0_AVX), ggml/src/ggml-cpu/arch/x86/quants.c (ggml_vec_dot_q8_0_q8_0, _q4_0_, _q5_0_ and
// _q6_K_q8_K: the AVX2 branches, which AVX-512 builds compile; hsum_float_8).
#pragma once

#include <cstdint>

#include "quant/ggml_blocks.h"
#include "quant/quant_type.h"

namespace kvaudit::ggml {

// Which x86 build of ggml-cpu: AVX2 (+FMA, F16C; the common one, and what GGML_NATIVE gives on an
// AVX2 machine) or AVX-512F. They differ only in the float steps below: 8 or 16 lanes per
// accumulator, and the reduction that ends them. The integer dots are the AVX2 branches in both.
enum class X86Build { kAvx2, kAvx512 };
inline int Lanes(X86Build b) { return b == X86Build::kAvx512 ? 16 : 8; }
// The build engine=llama.cpp reproduces, in its weight products and its flash attention alike:
// AVX2, which every x86 server of the last decade runs and llama.cpp's CPU backend uses wherever
// AVX-512 is absent. On an AVX-512 build of llama.cpp the f32/f16 sums differ in their last bits.
inline constexpr X86Build kEmulatedBuild = X86Build::kAvx2;

// hsum_float_8 (quants.c) and tinyBLAS's hsum(__m256): (a0+a4 + a2+a6) + (a1+a5 + a3+a7).
float Hsum8(const float a[8]);
// GGML_F32x8_REDUCE's last step: t = low half + high half, two hadds: (t0+t1) + (t2+t3).
float Hadd8(const float a[8]);
// _mm512_reduce_add_ps as GCC expands it: halves of 256, 128, 64 and 32 bits added in turn.
float Reduce16(const float a[16]);

// ggml_vec_dot_f32: 4 accumulators of Lanes(b) lanes over steps of 4·Lanes(b) elements (lane l of
// accumulator j takes elements 4·L·i + L·j + l, one FMA each), reduced (s0+s2)+(s1+s3) and then
// across lanes (AVX2: Hadd8; AVX-512: Reduce16); the elements past the last whole step are added
// to that float one product at a time.
float VecDotF32(X86Build b, const float* w, const float* x, int64_t n);
// ggml_vec_dot_f16 on values that are f16 already (weights as stored, activations rounded to f16
// by from_float): the same steps, but the sum and the tail products are accumulated in double.
float VecDotF16(X86Build b, const float* w, const float* x, int64_t n);
// tinyBLAS<Lanes(b)> (prefill: n >= 2 activation rows, weight rows % 4 == 0, n % Lanes(b) == 0):
// one accumulator per output (lane l takes elements l, l+L, ..., one FMA each), then tinyBLAS's
// hsum (AVX2: Hsum8; AVX-512: Reduce16).
float TinyBlasDot(X86Build b, const float* w, const float* x, int64_t n);

// The AVX2 build's float steps as SIMD kernels of each kernel path, and their scalar twins (the same
// bits): Steps8 = ggml_vec_dot_f32/_f16's whole 32-element steps reduced to one float (np % 32 == 0);
// TinyBlas8 = TinyBlasDot(kAvx2, ...) (n % 8 == 0). VecDotF32/F16 and TinyBlasDot call them.
float Steps8(const float* w, const float* x, int64_t np);
float Steps8Scalar(const float* w, const float* x, int64_t np);
float TinyBlas8(const float* w, const float* x, int64_t n);
float TinyBlas8Scalar(const float* w, const float* x, int64_t n);

// How the x86 vec_dot of a 32-element block row with its q8 row combines the 8 lane sums
// (ggml-cpu/arch/x86/quants.c): kFloat: no integer dot (f32/f16/bf16); kSym: × q8_0 (q4_0, q5_0,
// q8_0); kAffine: × q8_1, plus Σ m·s (q4_1, q5_1); kIq4Nl: × q8_0 with two accumulators
// alternating between even and odd blocks.
enum class VecDotKind { kFloat, kSym, kAffine, kIq4Nl };

// The integer block dot of weights or cache rows against q8 activations, as llama.cpp's AVX2 branch
// (which AVX-512 builds compile) and tinyBLAS_Q0_AVX form it: per 32-element block, 8 int32 lanes of
// 4 consecutive code products (maddubs + madd, or VNNI: the same exact sums), d = d_x·d_y in f32,
// acc_l = fma(d, float(lane_l), acc_l); then Hsum8; kAffine adds Σ fma(m_x, s_y) after, kIq4Nl sums
// its two accumulators before (an odd last block: its lanes' sum times d, added last). kc, qc:
// codes [nb·32] (kvaudit::ggml::BlockCodes' expanded form); kd, qd: the blocks' scales as f32 [nb];
// km, qm: q4_1/q5_1's m and q8_1's s [nb] (kAffine only). The scalar twin gives the same bits.
float DotQ8Blocks(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                  const float* qd, const float* qm, int64_t nb);
float DotQ8BlocksScalar(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, const int8_t* qc,
                        const float* qd, const float* qm, int64_t nb);

// DotQ8Blocks of one weight row as stored (nb 32-element blocks of `format`), without expanding it
// to codes first: each block's codes are unpacked in registers (llama.cpp's ggml_vec_dot_q4_0_q8_0,
// _q4_1_q8_1, _q5_0_q8_0, _q5_1_q8_1, _q8_0_q8_0, _iq4_nl_q8_0 do the same: bytes_from_nibbles_32,
// bytes_from_bits_32, the iq4_nl table shuffle) and dotted at once. The same bits as DotQ8Blocks
// of the row's expanded codes (BlockCodes, the format's to_codes), which is what the scalar twin
// computes. type: q4_0, q4_1, q5_0, q5_1, q8_0 or iq4_nl; kind: as DotQ8Blocks (kAffine for
// q4_1/q5_1, whose qm are q8_1's sums).
float DotQ8BlockRow(QuantType type, VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd,
                    const float* qm, int64_t nb);
float DotQ8BlockRowScalar(QuantType type, VecDotKind kind, const uint8_t* w, const int8_t* qc, const float* qd,
                          const float* qm, int64_t nb);

// Several dots per call, each output's bits those of the one-dot functions above: llama.cpp sums a
// row into one accumulator (a chain of dependent fmas), so one dot at a time waits on the fma
// latency; these interleave 4 independent chains. kind: kSym or kAffine (kIq4Nl takes the one-dot
// functions in turn).
// out[i] = DotQ8BlockRow(type, kind, w + i·row_bytes, qc, qd, qm, nb) for i in [0, n_rows): a
// decode's weight rows as stored, against one activation row.
void DotQ8BlockRows(QuantType type, VecDotKind kind, const uint8_t* w, int64_t row_bytes, int64_t n_rows,
                    const int8_t* qc, const float* qd, const float* qm, int64_t nb, float* out);
void DotQ8BlockRowsScalar(QuantType type, VecDotKind kind, const uint8_t* w, int64_t row_bytes, int64_t n_rows,
                          const int8_t* qc, const float* qd, const float* qm, int64_t nb, float* out);
// out[t·ldo + i] = DotQ8Blocks(kind, kc + i·nb·32, kd + i·nb, km + i·nb, qc + t·nb·32, qd + t·nb,
// qm + t·nb, nb) for weight row i in [0, n_w) and activation row t in [0, n_act): expanded weight
// rows (codes [n_w, nb·32], scales and (kAffine) mins [n_w, nb]) against a batch's activation rows,
// stored back to back (codes [n_act, nb·32], scales and (kAffine) sums [n_act, nb]). The SIMD kernel
// takes kSym outputs in tiles of 4 weight rows × 2 activation rows (tinyBLAS's AVX2 register tile,
// gemm4xN<2>: each block loaded once per tile), every output in its own accumulator, so the tiling
// changes no bit.
void DotQ8BlocksBatch(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, int64_t n_w,
                      const int8_t* qc, const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out,
                      int64_t ldo);
void DotQ8BlocksBatchScalar(VecDotKind kind, const int8_t* kc, const float* kd, const float* km, int64_t n_w,
                            const int8_t* qc, const float* qd, const float* qm, int64_t nb, int64_t n_act, float* out,
                            int64_t ldo);

// ggml_vec_dot_q6_K_q8_K (AVX2 branch): per 256-element super-block, 8 int32 lanes; lane m sums,
// over the 8 chunks of 32 elements, scale × (code·q8 products of elements 4m..4m+3 of the chunk),
// with the codes unsigned (0..63), minus 32·(bsums[2m]·scales[2m] + bsums[2m+1]·scales[2m+1]);
// acc_m = fma(d_x·fp16(d_w), float(lane_m), acc_m); then Hsum8. w: a q6_K row [nb blocks]. A SIMD
// kernel of each kernel path; the scalar twin gives the same bits (the lanes are exact integers).
float DotQ6_KQ8_K(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
float DotQ6_KQ8_KScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
// out[t·ldo] = DotQ6_KQ8_K(w, x + t·nb, nb) for t in [0, n_act): one weight row against a batch's
// q8_K rows x [n_act, nb], each block's codes unpacked once for 4 rows (the same bits).
void DotQ6_KQ8_KBatch(const uint8_t* w, const BlockQ8_K* x, int64_t nb, int64_t n_act, float* out, int64_t ldo);
void DotQ6_KQ8_KBatchScalar(const uint8_t* w, const BlockQ8_K* x, int64_t nb, int64_t n_act, float* out, int64_t ldo);

}  // namespace kvaudit::ggml
