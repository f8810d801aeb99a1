// The KV-cache interface: the f32 reference (kv/f32_cache.h) and every quantized format plug in
// here. A cache owns its storage layout AND its attention kernel, so a packed format can attend
// directly over its packed blocks instead of materialising f32 keys (calm's design: the cache type
// is a parameter of the attention kernel).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "base/thread_pool.h"

namespace kvaudit {

// Whose arithmetic the forward pass computes in: kvaudit's exact f32 (every weight's exact value,
// f32 activations, transformers' order of operations: the reference instrument), or llama.cpp CPU
// backend's (weight products with activations rounded to each weight type's vec_dot_type and
// ggml's summation orders, ops/ggml/llamacpp_matmul.h; ggml's RMSNorm, RoPE table and SwiGLU,
// ops/ggml/elementwise.h), so that a cache emulating llama.cpp runs inside llama.cpp's forward pass.
enum class EngineArithmetic { kExact, kLlamaCpp };

class KvCache {  // one per sequence, all layers
 public:
  virtual ~KvCache() = default;
  // Stores positions [pos0, pos0+n) of `layer`. k, k_pre_rope, v: [n, n_kv_heads, head_dim] (k after RoPE).
  // k_pre_rope lets formats quantize keys before rotation (KVQuant's pre-RoPE quantization).
  virtual void Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) = 0;
  // Causal attention of n queries at positions pos0..pos0+n-1 over cached positions [max(0, p-window+1), p].
  // q: [n, n_heads, head_dim] after RoPE; out: [n, n_heads, head_dim].
  virtual void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) = 0;
  virtual void Reset() = 0;  // empty, keep allocation (the next window reuses it)
  // The arithmetic of the forward pass this cache runs in (engine=llama.cpp: llama.cpp's).
  virtual EngineArithmetic arithmetic() const { return EngineArithmetic::kExact; }
  // Storage follows use: nothing per position is allocated when a cache is built;
  // Append grows storage in chunks of 256 positions, and Reserve allocates chunks for positions
  // [0, n_positions) up front (n_positions <= the cache's max_positions, its hard limit). A run
  // reserves what it will use, so a machine that cannot hold it is an error here (the one line
  // "KV cache for N tokens needs X ...", exit 2), and Append below the reservation never allocates.
  virtual Status Reserve(int n_positions) = 0;
  // What a deployment of the format holds: on average per token at a full cache (max_positions),
  // and for the tokens appended so far (packed bytes, scales, protected rows; docs/formats.md).
  virtual uint64_t bytes_per_token() const = 0;
  virtual uint64_t bytes_used() const = 0;
  // Storage this cache holds now: its chunks (whole ones, reserved or appended into) and the fixed
  // buffers of its protections (recent-window rings, sink rows, RoPE tables); not attention scratch.
  virtual uint64_t bytes_reserved() const = 0;
  // Diagnosis (kvaudit eval's attention report): rows [t0, t1) of K (after RoPE) and V of one
  // (layer, KV head) exactly as the query at position p reads them, in the model's basis (rotation
  // undone, pre-RoPE keys re-roped). k, v: [t1 - t0, head_dim]. Needs t1 <= p + 1 <= positions
  // appended. Returns false when the cache cannot expose its rows.
  virtual bool ReadRows(int /*layer*/, int /*kv_head*/, int /*p*/, int /*t0*/, int /*t1*/, float* /*k*/,
                        float* /*v*/) const {
    return false;
  }
};

}  // namespace kvaudit
