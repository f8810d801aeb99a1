// The per-key steps of llama.cpp's _one_chunk flash attention (kv/llamacpp/flash_attn.h), batched
// over the keys of one 64-key tile and over the query rows that see the same keys, with the same
// arithmetic per (row, key): bitwise what the per-key loop (OneChunkRowsReference) computes.
//
//  - ScoreTileQ8: ggml::DotQ8Blocks · scale for every key of a tile against one Q row. The integer lane sums
//    (4 consecutive code products each, exact in int32) come from K codes stored transposed, 16
//    keys per register: AVX-512 VNNI dpbusd on K codes + 128 (u8) × Q codes (s8), less 128·ΣQ, or
//    AVX2 maddubs on |k| × sign(q, k) as ggml does; the float steps per key are DotQ8Blocks's (d·lane
//    FMA per block in block order, ggml's hsum_float_8 order, then + Σ m·s, then × scale).
//  - SoftmaxWeights / SumWeights: the online-softmax bookkeeping of one row (M, S, and each key's
//    ms and vs), the running max vectorised, the expf calls batched (kv/llamacpp/expf.h: libm's
//    bits), the S chains of a row group interleaved.
//  - AccumulateV: acc = acc·ms (on a new max) then fma(v, vs, acc) for every key in order, for up to
//    4 rows at once with the accumulators in registers; per element this is exactly ScaleF32 /
//    MadF32 (or the f16-rounded twins), so the register width does not change bits.
// Each has a scalar twin; tests/unit/kv_llamacpp_tile_test.cc holds them together.
#pragma once

#include <cstdint>

#include "kv/formats/ggml_type.h"

namespace kvaudit::llamacpp {

inline constexpr int kTileKeys = 64;  // GGML_FA_TILE_KV: keys per tile

// One tile's K rows in both forms. Row-major (ExpandKRow): kc [64, hd], kd / km [64, hd/32].
// Transposed (TransposeKTile): gt [hd/4, 64] int32 = codes 4g..4g+3 of key j at g·64 + j (each
// code + 128 where the VNNI kernel reads them), dt / mt [hd/32, 64].
struct KTileView {
  const int8_t* kc;
  const float *kd, *km;
  const int32_t* gt;
  const float *dt, *mt;
};
// One Q row converted to q8_0 / q8_1 (ConvertQRow): codes [hd], d / m [hd/32], and qg [hd/4] =
// −128 · (sum of codes 4g..4g+3) (QGroupCorrections; the VNNI kernel's offset).
struct QRowView {
  const int8_t* qc;
  const float *qd, *qm;
  const int32_t* qg;
};

// Keys [j_lo, j_hi] (tile-relative) of the row-major tile -> the transposed form.
void TransposeKTile(const int8_t* kc, const float* kd, const float* km, int hd, int j_lo, int j_hi, int32_t* gt,
                    float* dt, float* mt);
void QGroupCorrections(const int8_t* qc, int hd, int32_t* qg);

// s[j] = ggml::DotQ8BlocksScalar(kind, key j, q) · scale for j in [j_lo, j_hi]; s has kTileKeys entries, and
// the SIMD kernel may write entries outside [j_lo, j_hi].
void ScoreTileQ8(ggml::VecDotKind kind, const KTileView& k, const QRowView& q, int nb, float scale, int j_lo, int j_hi,
                 float* s);
void ScoreTileQ8Scalar(ggml::VecDotKind kind, const KTileView& k, const QRowView& q, int nb, float scale, int j_lo,
                       int j_hi, float* s);

// One row over keys [j_lo, j_hi] in order, as ops.cpp: if s > M {ms = expf(M − s), M = s, vs = 1}
// else {ms = 1, vs = expf(s − M)}; S = fma(S, ms, vs). up[j] = 1 on a new max. Arrays are
// tile-indexed (kTileKeys entries).
// SoftmaxWeightsScalar is that loop; SoftmaxWeights computes the same M, up, ms, vs (the running
// max 16 keys at a time on AVX-512, the expf calls batched) and leaves S to SumWeights, which runs
// the S chains of a row group side by side.
void SoftmaxWeightsScalar(const float* s, int j_lo, int j_hi, float& M, float& S, uint8_t* up, float* ms, float* vs);
void SoftmaxWeights(const float* s, int j_lo, int j_hi, float& M, uint8_t* up, float* ms, float* vs);

// For rows r < n_rows (≤ 4) and keys j in [j_lo, j_hi] in order: if up[r][j], acc[r] ×= ms[r][j];
// acc[r] = fma(vt[j], vs[r][j], acc[r]); with f16_acc, each result rounded to fp16 (MadF16 /
// ScaleF16). acc[r] [hd]; vt [kTileKeys, hd] tile-indexed V rows as f32.
struct VRowsUpdate {
  int n_rows;
  float* acc[4];
  const uint8_t* up[4];
  const float* ms[4];
  const float* vs[4];
  float* S[4];  // the rows' running sums, for SumWeights
};
// S[r] = fma(S[r], ms[r][j], vs[r][j]) for keys j in [j_lo, j_hi] in order.
void SumWeights(const VRowsUpdate& u, int j_lo, int j_hi);
void AccumulateV(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, bool f16_acc);
void AccumulateVScalar(const VRowsUpdate& u, const float* vt, int hd, int j_lo, int j_hi, bool f16_acc);

}  // namespace kvaudit::llamacpp
