// Attention kernels over TensorStores: the twins of kv/f32_attention.h's AttendTile / AttendChunk
// for caches whose rows are read through a store (packed, and possibly a function of the query
// position, kv/tensor_store.h). Same row convention: for one KV head the G query heads of its
// group are stacked, row r = token r / G, head r % G; queries already scaled by s.scale.
#pragma once

#include <cstdint>

#include "kv/f32_attention.h"
#include "kv/tensor_store.h"

namespace kvaudit {

// Decode kernel, AttendChunk's contract: rows against keys [k0, k1) only, through k.Dot and
// v.WeightedSum at each row's own query position (fused reads, no f32 row); leaves unnormalised o
// [rows, head_dim] and per-row (m, l). scores scratch: [k1 - k0].
void AttendChunkStores(const AttnShape& s, const float* qs, int n_tok, int pos0, const TensorStore& k,
                       const TensorStore& v, int k0, int k1, float* o, PartialRow* part, float* scores);

// Prefill kernel, AttendTile's contract. Keys below StableEnd(pos0) of both stores are read the
// same way by every query of the tile, so they are materialised once per key tile of kKeyTile and
// go through sgemm as in AttendTile; the remaining keys of each row ([StableEnd, p], e.g. a moving
// full-precision window) are read per query with Dot/WeightedSum in sub-chunks of kKeyTile and
// merged by online softmax. scratch: >= StoreTileScratchFloats(n_tok, s).
int64_t StoreTileScratchFloats(int n_tok, const AttnShape& s);
void AttendTileStores(const AttnShape& s, const float* qs, int n_tok, int pos0, const TensorStore& k,
                      const TensorStore& v, float* o, float* scratch);

}  // namespace kvaudit
