#include "decide/targets/kv_cells.h"

#include <algorithm>

#include "base/status.h"

namespace kvaudit {
namespace {

constexpr int kLlamaCppPadding = 256;  // llama.cpp src/llama-context.cpp: n_ctx = GGML_PAD(n_ctx, 256)
constexpr int kLlamaCppBatch = 2048;   // common/common.h n_batch; n_ubatch = min(n_batch, n_ubatch)

uint64_t RoundUp(uint64_t n, uint64_t to) { return to <= 1 ? n : (n + to - 1) / to * to; }

std::string FormatRatio(double r) {
  std::string s = std::to_string(r);  // "0.800000"
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// llama.cpp de3ff815 src/llama-kv-cache-iswa.cpp: size_swa = GGML_PAD(min(size_base, n_swa ·
// (unified ? n_seq_max : 1) + n_ubatch), 256), size_base = the padded n_ctx_seq; --swa-full sets
// size_swa = size_base. src/llama-context.cpp: n_batch = min(n_ctx, n_batch) for causal models and
// n_ubatch = min(n_batch, n_ubatch).
uint64_t LlamaCppSwaCells(const CellRule& r, uint64_t global, int window) {
  const uint64_t n_ubatch = std::min<uint64_t>({global, kLlamaCppBatch, static_cast<uint64_t>(r.n_ubatch)});
  const uint64_t want = static_cast<uint64_t>(window) * r.n_seq + n_ubatch;
  return RoundUp(std::min(global, want), kLlamaCppPadding);
}

// vLLM vllm/v1/kv_cache_interface.py@001cabc1 SlidingWindowSpec.max_memory_usage_bytes: during a
// chunked prefill a request holds its last window − 1 computed tokens plus the newly scheduled
// ones (at most max_num_batched_tokens), never more than max_model_len, and one block more since
// the window need not start at a block boundary.
uint64_t VllmWindowCells(const CellRule& r, int ctx, int window) {
  const uint64_t tokens = std::min<uint64_t>(static_cast<uint64_t>(window) - 1 + r.batched_tokens, ctx);
  return (RoundUp(tokens, r.round_to) / r.round_to + 1) * r.round_to;
}

}  // namespace

CellRule LlamaCppCells(bool swa_full) {
  CellRule r;
  r.sliding = swa_full ? CellRule::Sliding::kFull : CellRule::Sliding::kLlamaCppIswa;
  r.round_to = kLlamaCppPadding;
  r.engine = swa_full ? "llama.cpp --swa-full" : "llama.cpp";
  r.full_why = "--swa-full: sliding layers hold every cell";
  return r;
}

// ik_llama.cpp keeps one cache of n_ctx cells for every layer and applies a window only in the mask
// (ikawrakow/ik_llama.cpp@8337e4cd src/llama.cpp kv_size = cparams.n_ctx; src/llama-context.h
// llama_swa_calc_window_view); its --swa-compress is ignored outside OpenPangu, DeepSeek4, Laguna.
CellRule IkLlamaCppCells() {
  CellRule r;
  r.round_to = 256;  // ik_llama.cpp src/llama.cpp: GGML_PAD(n_ctx, get_padding(flash_attn)), 256 with FA
  r.engine = "ik_llama.cpp";
  r.full_why = "sliding layers hold every cell: ik_llama.cpp has one cache for all layers, the window only masks";
  return r;
}

CellRule VllmCells() {
  CellRule r;
  r.sliding = CellRule::Sliding::kVllmWindow;
  r.round_to = 16;  // vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE
  r.engine = "vLLM";
  return r;
}

// SGLang sizes two token pools for a hybrid sliding-window model: the full layers' and the sliding
// layers', swa_tokens = int(full_tokens · swa_full_tokens_ratio) (python/sglang/srt/model_executor/
// model_runner_kv_cache_mixin.py@001ccef0 set_num_tokens_hybrid_swa; server_args.py default 0.8;
// --disable-hybrid-swa-memory: one pool, every layer full). For full pools of ctx tokens the sliding
// layers hold int(0.8 · ctx), whatever the window: the pool is reserved at start-up.
CellRule SglangCells() {
  CellRule r;
  r.sliding = CellRule::Sliding::kSglangRatio;
  r.engine = "SGLang";
  return r;
}

// TensorRT-LLM's V1 KV cache manager gives every layer max_seq_len unless max_attention_window is set
// (exact here); the V2 manager that "auto" picks for gpt-oss and Gemma 3 windows the sliding layers
// (_torch/pyexecutor/_util.py@0c9b8e66 _derive_layer_type_attention_windows) but charges them the
// prompt chunk in prefill and splits memory between pools at run time: counted full, an upper bound.
CellRule TensorRtLlmCells() {
  CellRule r;
  r.round_to = 32;  // KvCacheConfig tokens_per_block
  r.engine = "TensorRT-LLM";
  r.full_why =
      "sliding layers counted as full: exact on the V1 KV cache manager, an upper bound on V2 (gpt-oss, Gemma 3), "
      "which holds about the window per sliding layer in decode";
  return r;
}

CellRule HfCells(bool dynamic_cache) {
  CellRule r;
  r.sliding = dynamic_cache ? CellRule::Sliding::kHfDynamic : CellRule::Sliding::kFull;
  r.engine = dynamic_cache ? "transformers DynamicCache" : "transformers QuantizedCache";
  r.full_why = "QuantizedCache keeps every token of every layer (no sliding-window layer)";
  return r;
}

CellRule SpanCells() {
  CellRule r;
  r.sliding = CellRule::Sliding::kSpan;
  r.engine = "kvaudit";
  return r;
}

uint64_t LayerCells(const CellRule& r, const ModelConfig& c, int layer, int ctx) {
  KV_CHECK(ctx >= 1 && layer >= 0 && layer < c.n_layers);
  const uint64_t global = RoundUp(static_cast<uint64_t>(ctx), static_cast<uint64_t>(r.round_to));
  if (!c.is_sliding(layer)) return global;
  const int w = c.layer_window(layer);
  switch (r.sliding) {
    case CellRule::Sliding::kFull: return global;
    case CellRule::Sliding::kLlamaCppIswa: return LlamaCppSwaCells(r, global, w);
    case CellRule::Sliding::kVllmWindow: return VllmWindowCells(r, ctx, w);
    // transformers cache_utils.py@004999d9 DynamicSlidingWindowLayer.update keeps
    // full_key_states[:, :, -sliding_window + 1:] between steps.
    case CellRule::Sliding::kHfDynamic: return std::min<uint64_t>(ctx, std::max(1, w - 1));
    case CellRule::Sliding::kSpan: return std::min(ctx, w);
    case CellRule::Sliding::kSglangRatio: return static_cast<uint64_t>(static_cast<double>(global) * r.swa_ratio);
  }
  return global;
}

std::string SlidingCellsText(const CellRule& r, const ModelConfig& c, int ctx) {
  if (c.n_sliding_layers() == 0) return "";
  const std::string w = std::to_string(c.sliding_window), n = std::to_string(ctx);
  switch (r.sliding) {
    case CellRule::Sliding::kFull: return r.full_why;
    case CellRule::Sliding::kLlamaCppIswa:
      return "sliding: min(" + n + ", " + w + (r.n_seq > 1 ? " x " + std::to_string(r.n_seq) : "") + " + " +
             std::to_string(r.n_ubatch) + ") rounded up to 256 (llama.cpp's iSWA cache, -ub " +
             std::to_string(r.n_ubatch) + ")";
    case CellRule::Sliding::kVllmWindow:
      return "sliding: min(" + w + " - 1 + " + std::to_string(r.batched_tokens) + ", " + n +
             ") tokens in blocks of 16, plus one block (vLLM SlidingWindowSpec, --max-num-batched-tokens " +
             std::to_string(r.batched_tokens) + ")";
    case CellRule::Sliding::kHfDynamic: return "sliding: the last " + w + " - 1 tokens (DynamicSlidingWindowLayer)";
    case CellRule::Sliding::kSpan: return "sliding: the " + w + " positions attention reads";
    case CellRule::Sliding::kSglangRatio:
      return "sliding: " + FormatRatio(r.swa_ratio) + " x " + n +
             " cells, whatever the window (SGLang's SWA pool, --swa-full-tokens-ratio " + FormatRatio(r.swa_ratio) +
             "; --disable-hybrid-swa-memory: every cell)";
  }
  return "";
}

}  // namespace kvaudit
