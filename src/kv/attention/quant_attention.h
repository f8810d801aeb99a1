// The attention chunk kernel over TensorStores: the twin of kv/attention/f32_attention.h's AttendChunk for
// caches whose rows are read through a store (packed, and possibly a function of the query
// position, kv/store/tensor_store.h). Same row convention: for one KV head the G query heads of its
// group are stacked, row r = token r / G, head r % G; queries already scaled by s.scale.
// Prefill and decode both run it, per row and per absolute key chunk (kv/attention/chunked_attention.h), so
// a row reads the same store calls with the same arguments either way: batch-invariant whatever
// the store's Dot/WeightedSum order, as long as they are deterministic.
#pragma once

#include <cstdint>

#include "kv/attention/f32_attention.h"
#include "kv/store/tensor_store.h"

namespace kvaudit {

// AttendChunk's contract: rows against keys [k0, k1) only, through k.DotMulti and
// v.WeightedSumMulti at each row's own query position (fused reads, no f32 row); leaves unnormalised o
// [rows, head_dim] and per-row (m, l). scores scratch: [G, k1 - k0] (the G rows of a token share
// each K and V row read: TensorStore::DotMulti / WeightedSumMulti).
void AttendChunkStores(const AttnShape& s, const float* qs, int n_tok, int pos0, const TensorStore& k,
                       const TensorStore& v, int k0, int k1, float* o, PartialRow* part, float* scores);

}  // namespace kvaudit
