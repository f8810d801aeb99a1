// The forward pass of a llama-family decoder (transformers modeling_llama.py LlamaDecoderLayer;
// mistral/qwen2/qwen3 differ only by the ModelConfig flags):
//   x = embed[tokens]
//   per layer: h = RMSNorm(x)·w_attn;  q,k,v = h·Wqkvᵀ (+b);  [qwen3: per-head RMSNorm of q, k];
//              RoPE(q, k);  cache ← (k, v);  x = x + Attend(q)·Woᵀ (+b)
//              h = RMSNorm(x)·w_ffn;  x = x + (silu(h·Wgateᵀ) ⊙ h·Wupᵀ)·Wdownᵀ
//                                     (mixture of experts: x = x + MoeFfn(h), model/moe.h)
//   logits = RMSNorm(x)·w_final · Wlmᵀ
// Gemma 2/3 (transformers modeling_gemma2.py / modeling_gemma3.py, llama.cpp gemma2.cpp /
// gemma3.cpp): x scaled by sqrt(d_model) at the start, each sublayer's output RMS-normalised
// before its residual add (sandwich norms), a GeGLU FFN, Gemma 2's final logit softcap; the
// attention's window, scale, softcap and gpt-oss's sinks are the cache's (AttnShapeFor).
// All f32, in transformers' order of operations. Deterministic: bitwise identical results for any
// thread count (see ops/matmul.h and kv/f32_cache.cc for how work is split).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "base/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/moe.h"
#include "ops/aligned_buffer.h"
#include "ops/rope.h"

namespace kvaudit {

class Forward {
 public:
  // Tokens are processed in chunks of at most this many (bounded activation memory: ~30 KiB/token
  // for kvq-code-16m, plus vocab floats per token when all logits are requested).
  static constexpr int kMaxChunk = 512;

  // context: the tokens the run is configured for (llama.cpp's -c, vLLM's --max-model-len), on
  // which LongRoPE's choice of factors depends (ops/rope.h); 0 = unstated, which only a model
  // without LongRoPE accepts.
  Forward(const Model& model, KvCache& cache, ThreadPool& pool, int context = 0);

  // Runs tokens at positions pos0 .. pos0+n-1 (the cache must hold positions [0, pos0) of this
  // sequence). logits: [n, vocab] when all_logits, else [1, vocab] for the last token only.
  // Token ids must be in [0, vocab) (callers reject bad input; checked here as an invariant).
  void Run(std::span<const int32_t> tokens, int pos0, float* logits, bool all_logits);

  // The bytes of the activation buffers a Forward of this model holds (a chunk of kMaxChunk
  // positions; a MoE model's expert buffers too), and those this one holds: equal (tested). What
  // each cache run of a job holds beside its cache and its logits, known before it is built
  // (docs/architecture.md "Peak memory of the jobs").
  static uint64_t ActivationBytes(const ModelConfig& c);
  uint64_t activation_bytes() const;

  // Debug hook (tests): called for every layer and chunk with k (after RoPE) and v, both
  // [n, n_kv_heads, head_dim], for positions pos0 .. pos0+n-1.
  using KvObserver = std::function<void(int layer, int pos0, int n, const float* k, const float* v)>;
  void set_kv_observer(KvObserver observer) { kv_observer_ = std::move(observer); }

  // Debug hook (tests): called for every MoE layer and chunk with the routing of positions
  // pos0 .. pos0+n-1: experts [n, n_experts_used] (best first) and their weights, same shape.
  using RouteObserver = std::function<void(int layer, int pos0, int n, const int32_t* experts, const float* weights)>;
  void set_route_observer(RouteObserver observer) { route_observer_ = std::move(observer); }

 private:
  void RunChunk(const int32_t* tokens, int n, int pos0, float* logits, bool all_logits);
  void Layer(int layer, int n, int pos0);
  void Ffn(int layer, int n, int pos0);
  // The forward pass's steps in the cache's engine's arithmetic (model/kv_cache.h EngineArithmetic).
  void Project(const float* x, int n, const WeightMatrix& w, float* y);
  void Norm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) const;
  void GatedSilu(const float* gate, const float* up, float* out, int64_t n) const;
  static void AddBias(float* proj, const float* bias, int n, int d);
  void PostNorm(const float* w, int n);

  const Model& model_;
  const ModelConfig& c_;
  KvCache& cache_;
  ThreadPool& pool_;
  const bool llamacpp_;                         // the cache runs in llama.cpp's arithmetic
  const RopeArithmetic rope_arithmetic_;        // its RoPE table's
  RopeParams rope_params_, rope_local_params_;  // the model's, as applied at `context`
  RopeTable rope_;
  RopeTable rope_local_;  // the sliding layers' where they differ (Gemma 3), else unused
  KvObserver kv_observer_;
  RouteObserver route_observer_;
  std::unique_ptr<MoeFfn> moe_;  // MoE models only
  // Activations for one chunk (C = kMaxChunk rows):
  AlignedBuffer x_;     // [C, d_model] residual stream
  AlignedBuffer h_;     // [C, d_model] normed input of a sublayer
  AlignedBuffer qkv_;   // [C, q_dim + 2*kv_dim] fused projection output
  AlignedBuffer q_;     // [C, n_heads, head_dim]
  AlignedBuffer k_;     // [C, n_kv_heads, head_dim] after RoPE
  AlignedBuffer kpre_;  // [C, n_kv_heads, head_dim] before RoPE
  AlignedBuffer v_;     // [C, n_kv_heads, head_dim]
  AlignedBuffer attn_;  // [C, n_heads, head_dim] attention output
  AlignedBuffer proj_;  // [C, d_model] o_proj / down_proj output
  AlignedBuffer gu_;    // [C, 2*d_ff] gate | up (dense FFN only)
  AlignedBuffer act_;   // [C, d_ff] silu(gate)·up (dense FFN only)
};

}  // namespace kvaudit
