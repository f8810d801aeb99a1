// The KV cache of a cache configuration: one K and one V TensorStore per (layer, KV head), built by a
// store factory (kv/store/row_store.h for the row-codec formats; KIVI and others bring their own), and
// attention computed over the stores (kv/attention/quant_attention.h) through the f32 reference cache's
// driver (kv/attention/chunked_attention.h): the same chunking, work split and merge order.
//
// Rotation (rot=1, native engine): each quantized tensor of the head is stored in the
// Hadamard basis over the full head_dim (QuaRot arXiv 2404.00456; exllamav2 and llama.cpp PR
// #21038 rotate the same way): K rows and the queries are rotated (q·k is unchanged), V rows are
// rotated and the attention output rotated back (H is its own inverse). RotationMode::kAuto is off
// in the native engine. Full-precision tensors are never rotated (modifiers do not apply to them).
// A format that rotates its rows itself (TurboQuant keys: RowRotatesItself) gets its rows as they
// are and reads back in the Hadamard basis, so its queries (or output) are rotated the same way,
// with or without rot=1 — as vLLM's decode rotates the query instead of un-rotating the keys.
//
// Sizes: bytes_used() = Σ_stores BytesFor(current length); bytes_per_token() =
// ceil(Σ_stores BytesFor(max_positions) / max_positions), i.e. the average at a full cache, with
// the fixed protections (sinks, the recent window, scales, channel lists) amortised over it;
// bytes_reserved() = Σ_stores bytes_reserved (their chunks, rings and sink rows) + the RoPE table
// of pre-RoPE keys, which grows with the positions like the stores (kv/store/chunked_rows.h).
#pragma once

#include <functional>
#include <memory>

#include "kv/config/cache_config.h"
#include "kv/config/calibration.h"
#include "kv/store/store_spec.h"
#include "kv/store/tensor_store.h"
#include "model/config.h"
#include "model/kv_cache.h"

namespace kvaudit {

using StoreFactory = std::function<std::unique_ptr<TensorStore>(const StoreSpec&)>;

// `cache_config` must have passed CacheConfig::Validate for `config` (calibration given when needed).
// The native engine only (engine=llama.cpp is a cache of its own).
std::unique_ptr<KvCache> MakeQuantCache(const ModelConfig& config, const CacheConfig& cache_config,
                                        const KvCalibration* calib, int max_positions, const StoreFactory& factory);

}  // namespace kvaudit
