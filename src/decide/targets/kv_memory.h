// The KV memory of one sequence of `ctx` tokens, layer by layer: each layer holds the cells its
// engine keeps at that context (kv_cells.h: global layers the context, sliding-window layers what
// the engine keeps for the window) × the bytes of one cell's K and V in that engine's layout. Every
// KV memory figure kvaudit prints comes from here: deploy's and info's engine figures, and
// kvaudit's own accounting (SpanMemory: budgets, "of f16", audit and recommend). Sources in
// docs/deployment.md "KV memory in each engine's layout".
//
// bytes_per_token is the cache at the target context divided by the context (rounded up): with
// sliding layers it depends on the context, and at any context it includes the engine's padding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decide/targets/kv_cells.h"
#include "decide/targets/target_view.h"
#include "model/config.h"

namespace kvaudit {

struct LayerMemory {
  bool sliding = false;           // attends through the model's window (ModelConfig::is_sliding)
  uint64_t bytes_per_cell = 0;    // K and V of one cell, all KV heads
  uint64_t k_bytes_per_cell = 0;  // of which K (engines that store K and V apart; else 0)
  uint64_t cells = 0;             // held at the target context
};

struct KvMemory {
  uint64_t bytes_per_token = 0;     // ⌈bytes_at_target / ctx⌉
  uint64_t bytes_at_target = 0;     // Σ layers cells × bytes_per_cell, plus extra_bytes
  double gib_at_target = 0;         // bytes_at_target / 2^30
  uint64_t extra_bytes = 0;         // not per cell (scale tensors)
  std::vector<LayerMemory> layers;  // [n_layers]
  std::string layout;               // one line: the layers' cells, then how a cell is counted

  int LayersOf(bool sliding) const;
  uint64_t BytesOf(bool sliding) const;   // Σ cells × bytes_per_cell over those layers
  uint64_t KBytesOf(bool sliding) const;  // Σ cells × k_bytes_per_cell over those layers
  // "12 global layers x 4096 cells + 12 sliding layers x 768 cells" ("32 layers x 32768 cells"
  // without sliding layers).
  std::string CellsText() const;
};

// Each layer's bytes per cell (K and V, all KV heads; [n_layers]) times the rule's cells, summed;
// `how` says how a cell is counted and ends the layout line. k_bytes_per_cell: K's share
// ([n_layers]), or empty when not split.
KvMemory SumLayers(const std::vector<uint64_t>& bytes_per_cell, const CellRule& rule, const ModelConfig& c, int ctx,
                   uint64_t extra_bytes, const std::string& how, const std::vector<uint64_t>& k_bytes_per_cell = {});

// llama.cpp, ik_llama.cpp, ollama (ggml caches): per layer a K and a V tensor of n_kv_heads rows of
// ggml_row_size(type, head_dim) bytes per cell (src/llama-kv-cache.cpp).
KvMemory GgmlCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, const CellRule& rule);

// vLLM, SGLang, TensorRT-LLM (paged caches of one element type per layer): element bytes × n_kv_heads
// × head_dim per token and tensor; plus the scale tensors, `scale_bytes` in all (not per token).
KvMemory PagedCacheMemory(const std::vector<LayerKv>& layers, const ModelConfig& c, int ctx, const CellRule& rule,
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

// kvaudit's own accounting at ctx (SpanCells): layer l holds bytes_per_position[l] for each
// position its attention reads ([n_layers]).
KvMemory SpanMemory(const std::vector<uint64_t>& bytes_per_position, const ModelConfig& c, int ctx);

// The f16 cache in kvaudit's accounting, per token at ctx: the denominator of every "of f16"
// ratio and of --budget NxF16. Equals F16BytesPerToken(c) for a model without sliding layers.
uint64_t F16BytesPerTokenAt(const ModelConfig& c, int ctx);

// Bytes per element of a float or fp8 format in an engine's dtype (f32 4, f16/bf16 2, fp8 1).
int ElementBytes(KvFormat f);

}  // namespace kvaudit
