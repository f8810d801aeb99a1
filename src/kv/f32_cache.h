// The f32 reference KV cache: keys (after RoPE) and values stored exactly, attention computed with
// the blocked kernels of kv/attention/f32_attention.h. Every quantized format is measured against this one.
#pragma once

#include <memory>

#include "model/config.h"
#include "model/kv_cache.h"

namespace kvaudit {

// Storage: per (layer, KV head) K and V rows [positions, head_dim] f32 in chunks of kCacheChunk
// positions (kv/store/chunked_rows.h), allocated as the cache fills or by Reserve; max_positions
// is the hard limit (bytes_per_token = n_layers * 2 * n_kv_heads * head_dim * 4; kvq-code-16m:
// 8 KiB/token, 2 MiB per chunk of 256 positions, 32 MiB at 4096).
std::unique_ptr<KvCache> MakeF32Cache(const ModelConfig& config, int max_positions);

}  // namespace kvaudit
