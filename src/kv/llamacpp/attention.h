// The two llama.cpp CPU flash-attention paths that matter for scoring and decoding, over the packed
// K/V rows of ONE (layer, KV head) (ggml/src/ggml-cpu/ops.cpp ggml_compute_forward_flash_attn_ext_f16;
// docs/research/llamacpp-kv-notes.md §2):
//   OneChunkRows — _one_chunk: every quantized cache (prefill and decode), and f16/f32 decode.
//     Per (query row): Q converted to K's vec_dot_type (q8_0 / q8_1 with the x86 from_float; f16 or
//     bf16 rounding for f16 / bf16 K; f32 stays), s = vec_dot(k, q)·scale for every visible key IN
//     POSITION ORDER, online softmax with libm expf (M, S, ms, vs exactly as the source), V rows
//     converted to f32 (dequantize_row_*) and accumulated with ggml_vec_mad_f32 — or, for f16 V, in an
//     fp16 accumulator rounded after every key (ggml_vec_mad_f16 / ggml_vec_scale_f16); output × 1/S.
//   TiledRows — the tiled path (K and V both f16 or both f32, ≥ 64 query rows): Q stays f32, K/V tiles
//     of 64 keys converted to f32, KQ in f32 (canonical dot order), ×scale, per-tile max / rescale /
//     exp-sum (double), P·V in f32 (ascending keys), output × 1/S. (ggml uses its SIMD ggml_v_expf
//     and simd_gemm here; we use expf, ~1 ulp, and ops/dot.h's order.)
// Softcap (Gemma 2): the kernel divides its scale by the cap and takes s = cap·tanhf(s·scale)
// (ops.cpp `scale /= logit_softcap`); sinks (gpt-oss): after the last key, s_h joins as one more
// online-softmax step that only updates M and S (ops.cpp "sinks - apply only on the first
// kv-chunk"), with VKQ in f32.
// Not emulated: split-KV decode (one token over ≥ 512 f16 keys is split into per-thread chunks whose
// f16 partials are merged in f32; we run it as one chunk), ALiBi.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/formats/format_table.h"
#include "kv/store/chunked_rows.h"

namespace kvaudit::llamacpp {

struct HeadKv {  // the cache rows of one (layer, KV head)
  KvFormat fk, fv;
  const ChunkedRows* k;  // [positions, RowBytes(fk, hd)] in chunks (kv/store/chunked_rows.h)
  const ChunkedRows* v;  // [positions, RowBytes(fv, hd)]
};

struct FaShape {
  int head_dim = 0;
  int group = 1;   // G query heads per KV head
  int window = 0;  // sliding window (0 = full causal)
  float scale = 1.0f;
  float softcap = 0.0f;          // 0 = none
  const float* sinks = nullptr;  // [G] the sink logits of this KV head's query heads, or null
};

// Per-thread scratch, grown on demand.
struct FaScratch {
  std::vector<int8_t> qc, kc;    // [rows, hd] expanded Q codes; [64, hd] expanded K tile codes
  std::vector<float> qd, qm;     // [rows, hd/32] Q block scales / q8_1 sums
  std::vector<float> kd, km;     // [64, hd/32]
  std::vector<int32_t> qg, kg;   // [rows, hd/4] Q group corrections; [hd/4, 64] K tile codes transposed
  std::vector<float> kdt, kmt;   // [hd/32, 64] K tile scales transposed (kv/llamacpp/fa_tile.h)
  std::vector<float> qf;         // [rows, hd] Q as f32 (rounded to f16/bf16 where K is)
  std::vector<float> kt, vt;     // [64, hd] K / V tile as f32
  std::vector<float> s;          // [rows, 64] scores / probabilities
  std::vector<float> acc, m, l;  // [rows, hd] VKQ accumulators; [rows] running max M and sum S
};

// True if llama.cpp runs the tiled path for an n-token ubatch with these K/V types.
bool UsesTiledPath(KvFormat fk, KvFormat fv, int n_tokens);

// Attention of rows r = 0 .. nt·G − 1 (token r / G at position p0 + r / G, head r % G of the group)
// over keys [FirstKey(p), p]. q: [nt·G, hd] f32 after RoPE (and rotation); out: [nt·G, hd].
// OneChunkRows batches each tile's keys and up to 4 rows that see the same keys (fa_tile.h);
// OneChunkRowsReference is the per-key loop it must equal bit for bit, on the scalar twins.
void OneChunkRows(const FaShape& sh, const HeadKv& kv, const float* q, int nt, int p0, float* out, FaScratch& sc);
void OneChunkRowsReference(const FaShape& sh, const HeadKv& kv, const float* q, int nt, int p0, float* out,
                           FaScratch& sc);
void TiledRows(const FaShape& sh, const HeadKv& kv, const float* q, int nt, int p0, float* out, FaScratch& sc);

// Bytes of one head row of format f (llama.cpp block layout), and the CPU write path
// (type_traits_cpu[f].from_float via ggml_set_rows): x [hd] -> dst [RowBytes(f, hd)].
uint64_t RowBytes(KvFormat f, int hd);
void WriteRow(KvFormat f, const float* x, int hd, uint8_t* dst);

// One f32 row of V (or K) as ggml's to_float gives it: dequantize_row_* / fp16 / bf16 / f32.
void RowToF32(KvFormat f, const uint8_t* row, int hd, float* out);

}  // namespace kvaudit::llamacpp
