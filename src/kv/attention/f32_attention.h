// Attention chunk kernels over f32 keys/values stored per KV head as [pos, head_dim] (row-major).
//
// A "row" is one (query token, query head) pair of a GQA group: for KV head g the G = n_heads /
// n_kv_heads query heads g*G .. g*G+G-1 all attend to the same keys, so their rows are stacked and
// share every key load. Row r of a group is token r / G, head r % G.
//
// Batch invariance: a row's partial over a key chunk depends only on the row's query, its
// position and the chunk — never on the other rows of the call. Scores are the canonical dot
// (ops/dot.h), probabilities e^(s − m) come from ExpSubSum (ops/activation.h), and o accumulates
// p_t·v_t in ascending t (fma per element). kv/attention/chunked_attention.h cuts keys into chunks and
// merges the partials; both prefill and decode go through it.
#pragma once

#include <cmath>
#include <cstdint>

namespace kvaudit {

struct AttnShape {
  int head_dim = 0;
  int group = 1;       // G query heads per KV head
  int window = 0;      // 0 = full causal; else keys [p - window + 1, p]
  float scale = 1.0f;  // 1/sqrt(head_dim), or the model's own (Gemma's query_pre_attn_scalar)
  // Gemma 2: every scaled score s becomes softcap·tanh(s/softcap) before the softmax; 0 = none.
  float softcap = 0.0f;
  // gpt-oss: the layer's learned sink logit per query head [n_heads] (joins each softmax's
  // denominator, never the output; MergeChunks), or null.
  const float* sinks = nullptr;
};

// Gemma 2's attention softcap on a row of scaled scores (transformers Gemma2Attention: scores /
// softcap, tanh, × softcap; llama.cpp build_attn_mha: the same three steps).
inline void SoftcapScores(const AttnShape& s, float* scores, int n) {
  if (s.softcap <= 0) return;
  for (int j = 0; j < n; ++j) scores[j] = std::tanh(scores[j] / s.softcap) * s.softcap;
}

// First key position visible from position p.
inline int FirstKey(const AttnShape& s, int p) { return s.window > 0 && p - s.window + 1 > 0 ? p - s.window + 1 : 0; }

// Per-row partial softmax state over a range of keys: max m and sum l of the unnormalised o.
struct PartialRow {
  float m, l;
};

// Rows = n_tok * G query rows qs [rows, head_dim] (already scaled by s.scale), tokens at positions
// pos0 .., against keys [k0, k1) only (a chunk of the cache): leaves the unnormalised o
// [rows, head_dim] and per-row (m, l) for MergeChunks. Rows that see no key in the chunk get
// m = -inf, l = 0, o = 0. k, v: the chunk's rows [k1 - k0, head_dim], row 0 = position k0 (caches
// store positions in chunks, kv/store/chunked_rows.h; only rows up to the last query are read).
// scores scratch: [k1 - k0].
void AttendChunk(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, int k0,
                 int k1, float* o, PartialRow* part, float* scores);

// AttendChunk with the G rows of each token sharing every key and value load (one pass over the
// chunk per token instead of one per row): bitwise the same results, as the per-row arithmetic is
// unchanged (loop interchange only). scores scratch: [G, k1 - k0].
void AttendChunkGrouped(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v,
                        int k0, int k1, float* o, PartialRow* part, float* scores);

// Naive reference (double accumulation, full softmax per row) for tests: normalised o [rows, hd]
// of rows = n_tok * G over every visible key. s.sinks, if set, points at this KV head's G sinks.
void AttendRef(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, float* o);

}  // namespace kvaudit
