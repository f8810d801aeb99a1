// The fused read kernels of the KIVI store (kv/store/kivi_store.h; KIVI: arXiv 2402.02750): key dots over
// one packed G-token group and weighted sums over packed value rows (the full-precision rows go
// through the f32 row codec, kv/formats/codec_kernels.h). Each has a plain scalar reference (…Ref) that
// the AVX-512 and AVX2 kernels reproduce bit for bit; the un-suffixed entry points run the SIMD kernel where it applies
// (G % 16 == 0 on the avx512 path, G % 8 == 0 on avx2, base/isa.h) and the reference otherwise, so a store reads the
// same bits through every call shape (Dot = DotMulti with one query, WeightedSum = WeightedSumMulti with one weight
// row).
//
// Arithmetic (fixed per (query, token) and per (weight row, row, channel), so a value never depends
// on the range asked for, on the other rows of the call or on the SIMD tiling):
//   Keys, token t of a group, channel c with f16 scale s_c and min m_c, query q:
//     w_c  = q_c · s_c                                  (one f32 product per channel)
//     a_t  = fma over c ascending: a = fma(w_c, code_ct, a), from a = +0
//     qm   = the canonical dot (ops/dot.h) of q and (m_0 .. m_{hd-1}) = DotF32(q, m, hd)
//     q·k̂_t = a_t + qm.
//   Values, row t, channel c in group g (scale s, min m), weight row w:
//     x̂_c = code_c · s + m  (the product is exact: code < 16, s is f16, so this is fma(code, s, m)
//            and AsymDequantizeGroup's value alike)
//     acc_c = fma(x̂_c, w_t, acc_c), rows in ascending t, one fma per row.
//   f32 rows (F32Codec): acc_c = fma(x_c, w, acc_c).
// Split invariance (tests/unit/kv_store_split_test.cc) follows: a score is a function of its token's
// group only, and an accumulator sees one fma per row in row order.
#pragma once

#include <cstdint>

namespace kvaudit {

// Bound on head_dim for the kernels' stack scratch (the store checks it).
inline constexpr int kKiviMaxHeadDim = 1024;

// One packed key group: codes [hd][cb] (cb = AsymCodeBytes(G, bits); channel c's G codes
// contiguous, first token in the low bits), sm [hd][2] f16 (scale, min) pairs. For the n_q queries
// q_i = q + i·q_stride [hd] and the tokens t in [lo, hi) ⊂ [0, G) of the group:
//   out[i·out_stride + t − lo] = q_i · k̂_t.
void KiviKeyGroupDot(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                     int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride);
void KiviKeyGroupDotRef(const uint8_t* codes, const uint16_t* sm, int hd, int G, int bits, const float* q,
                        int64_t q_stride, int n_q, int lo, int hi, float* out, int64_t out_stride);

// n_rows consecutive packed value rows: codes [n_rows][hd/G][cb], sm [n_rows][hd/G][2] f16. For the
// n_w weight rows w_i = w + i·w_stride [n_rows] and accumulators acc_i = acc + i·acc_stride [hd]:
//   acc_i[c] = fma(x̂_rc, w_i[r], acc_i[c]) for r = 0 .. n_rows−1 in order.
void KiviValueRowsAxpy(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                       int64_t w_stride, int n_w, float* acc, int64_t acc_stride);
void KiviValueRowsAxpyRef(const uint8_t* codes, const uint16_t* sm, int n_rows, int hd, int G, int bits, const float* w,
                          int64_t w_stride, int n_w, float* acc, int64_t acc_stride);

}  // namespace kvaudit
