// Attention kernels over f32 keys/values stored per KV head as [pos, head_dim] (row-major).
//
// A "row" is one (query token, query head) pair of a GQA group: for KV head g the G = n_heads /
// n_kv_heads query heads g*G .. g*G+G-1 all attend to the same keys, so their rows are stacked and
// share every key load (and every sgemm). Row r of a group is token r / G, head r % G.
#pragma once

#include <cstdint>

namespace kvaudit {

struct AttnShape {
  int head_dim = 0;
  int group = 1;       // G query heads per KV head
  int window = 0;      // 0 = full causal; else keys [p - window + 1, p]
  float scale = 1.0f;  // 1/sqrt(head_dim)
};

// First key position visible from position p.
inline int FirstKey(const AttnShape& s, int p) { return s.window > 0 && p - s.window + 1 > 0 ? p - s.window + 1 : 0; }

// Per-row partial softmax state over a range of keys: running max m, sum l, unnormalised o.
struct PartialRow {
  float m, l;
};

// Prefill kernel (flash-attention style): rows = n_tok * G query rows qs [rows, head_dim] (already
// scaled by s.scale), tokens at positions pos0 .. pos0+n_tok-1, over keys k/v [*, head_dim]
// (positions index rows). Processes keys in tiles of kKeyTile with online softmax; S and P use
// sgemm. Writes normalised outputs into o [rows, head_dim]. scratch: >= ScratchFloats(n_tok, s).
constexpr int kKeyTile = 256;
int64_t TileScratchFloats(int n_tok, const AttnShape& s);
void AttendTile(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v,
                float* o, float* scratch);

// Decode kernel: the same rows against keys [k0, k1) only (a chunk of the cache); leaves the
// unnormalised o [rows, head_dim] and per-row (m, l) for a later merge. Rows that see no key in
// the chunk get m = -inf, l = 0, o = 0. scores scratch: [k1 - k0].
void AttendChunk(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, int k0,
                 int k1, float* o, PartialRow* part, float* scores);

// AttendChunk with the G rows of each token sharing every key and value load (one pass over the
// chunk per token instead of one per row): bitwise the same results, as the per-row arithmetic is
// unchanged (loop interchange only). scores scratch: [G, k1 - k0].
void AttendChunkGrouped(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v,
                        int k0, int k1, float* o, PartialRow* part, float* scores);

// Naive reference (double accumulation, full softmax per row) for tests: same contract as AttendTile.
void AttendRef(const AttnShape& s, const float* qs, int n_tok, int pos0, const float* k, const float* v, float* o);

}  // namespace kvaudit
