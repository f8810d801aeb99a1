// How many cells (token slots) each layer of one sequence's KV cache holds at a context of ctx
// tokens, engine by engine: global layers hold the context (rounded up to the engine's padding or
// blocks); sliding-window layers (ModelConfig::is_sliding) hold what the engine keeps for the
// window. The one rule behind every KV memory figure kvaudit prints (kv_memory.h); sources in
// docs/deployment.md "KV memory in each engine's layout".
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace kvaudit {

struct CellRule {
  enum class Sliding {
    kFull,          // the window changes the attention only: sliding layers hold global's cells
    kLlamaCppIswa,  // llama.cpp's iSWA cache: PAD(min(global, n_swa·n_seq + n_ubatch), 256)
    kVllmWindow,    // vLLM SlidingWindowSpec: (⌈min(w − 1 + batched, ctx) / block⌉ + 1) blocks
    kHfDynamic,     // transformers DynamicSlidingWindowLayer: the last min(ctx, w − 1) tokens
    kSpan,          // kvaudit's accounting: the positions attention reads, min(ctx, w)
    kSglangRatio,   // SGLang's hybrid SWA pool: ⌊global · swa_ratio⌋ cells, whatever the window
  };
  Sliding sliding = Sliding::kFull;
  int round_to = 1;           // global cells: ctx rounded up to a multiple (256 cells, 16-token blocks)
  int n_ubatch = 512;         // llama.cpp -ub (common/common.h n_ubatch = 512)
  int n_seq = 1;              // llama.cpp: sequences a unified cache's window cells are kept for
  int batched_tokens = 8192;  // vLLM --max-num-batched-tokens (api server, GPUs of >= 70 GiB)
  double swa_ratio = 0.8;     // SGLang --swa-full-tokens-ratio (server_args.py default 0.8)
  std::string engine;         // who sizes the cache this way ("llama.cpp")
  std::string full_why;       // kFull: why sliding layers hold every cell, for the layout line
};

// The rules of the engines (docs/deployment.md): swa_full = llama.cpp's --swa-full.
CellRule LlamaCppCells(bool swa_full);
CellRule IkLlamaCppCells();  // every layer n_ctx padded to 256: one cache for all layers, the window masks
CellRule VllmCells();
CellRule SglangCells();       // page 1; sliding layers: --swa-full-tokens-ratio 0.8 of the full pool
CellRule TensorRtLlmCells();  // blocks of 32; its per-layer attention window is not set
CellRule HfCells(bool dynamic_cache);
CellRule SpanCells();  // kvaudit's own accounting (budgets, "of f16", audit and recommend)

// The cells layer `layer` holds at ctx tokens (ctx >= 1).
uint64_t LayerCells(const CellRule& rule, const ModelConfig& c, int layer, int ctx);

// How the sliding layers' cells were counted, for the layout line ("min(4096, 128 + 512) rounded
// up to 256 (llama.cpp's iSWA cache)"); "" when the model has no sliding layer.
std::string SlidingCellsText(const CellRule& rule, const ModelConfig& c, int ctx);

}  // namespace kvaudit
