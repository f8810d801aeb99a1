// The KV memory a configuration takes in an engine's own layout, for one sequence of `ctx` tokens.
// Not kvaudit's own accounting (`info --kv`, which counts f32 protections and its ring buffer):
// each function follows the engine's allocation, with its source in docs/deployment.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decide/targets/target_view.h"
#include "model/config.h"

namespace kvaudit {

struct KvMemory {
  uint64_t bytes_per_token = 0;  // one more token, all layers, K and V
  uint64_t bytes_at_target = 0;  // the cache for ctx tokens as the engine allocates it
  double gib_at_target = 0;      // bytes_at_target / 2^30
  std::string layout;            // how it was counted, one line
};

// llama.cpp, ik_llama.cpp, ollama (ggml caches): per layer a K and a V tensor of n_kv_heads rows of
// ggml_row_size(type, head_dim) bytes per cell (src/llama-kv-cache.cpp); cells = ctx rounded up to
// a multiple of `cell_padding` (llama.cpp PR #17046: 256).
KvMemory GgmlCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, int cell_padding);

// vLLM, SGLang, TensorRT-LLM (paged caches of one element type per layer): element bytes × n_kv_heads
// × head_dim per token and tensor; tokens rounded up to whole blocks of `block_tokens`; plus the
// scale tensors, `scale_bytes` in all (a constant, not per token).
KvMemory PagedCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, int block_tokens,
                          uint64_t scale_bytes);

// transformers QuantizedCache: per group of `group` elements, `nbits` codes packed into bytes plus
// a scale and a zero-point in the model dtype (2 bytes each); the newest `residual` tokens in the
// model dtype instead. nbits 0 = not quantized (DynamicCache): `full_bytes` per element.
struct HfCacheShape {
  int nbits = 0;
  int group = 64;
  int residual = 0;    // full-precision tokens held at ctx (at most residual_length - 1)
  int full_bytes = 2;  // bytes per element of the model dtype (f16/bf16: 2, f32: 4)
};
KvMemory HfCacheMemory(const HfCacheShape& shape, const ModelConfig& c, int ctx);

// Bytes per element of a float or fp8 format in an engine's dtype (f32 4, f16/bf16 2, fp8 1).
int ElementBytes(KvFormat f);

}  // namespace kvaudit
