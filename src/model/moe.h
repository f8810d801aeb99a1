// The mixture-of-experts FFN of Qwen3-MoE and Mixtral (docs/models-moe.md), as llama.cpp's
// build_moe_ffn computes it (src/llama-graph.cpp @ 00395eb2) and transformers'
// Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock describe it:
//   p = softmax(router · h)                      over all n_experts
//   S = the n_experts_used largest p, best first (ties: the lower expert index first)
//   w_s = p_s / Σ_S p   when norm_topk (the sum clamped below at 2^-14, as llama.cpp), else p_s
//   y = Σ_{s in S, best first} w_s · down_s(silu(gate_s · h) ⊙ up_s · h)
// gpt-oss (llama.cpp openai-moe.cpp, transformers GptOssMLP): r = router · h + b, S = the k largest
// r, w = softmax over those k r, and each expert has biases and the clamped SwiGLU
// (ops/gated_units.h): y_s = down_s(ClampedSwiglu(gate_s·h + b_g, up_s·h + b_u)) + b_d.
// All f32. Each expert runs over the tokens routed to it with MatMul, whose rows are batch
// invariant (ops/matmul.h), and each token's sum is taken in its own slot order: so a token's
// output is bitwise the same whatever else is in the batch (prefill = decode) and for any thread
// count. Under llama.cpp's arithmetic (engine=llama.cpp) the router is its MUL_MAT, each expert
// product its MUL_MAT_ID (ops/ggml/llamacpp_matmul.h LlamaCppMatMulEachRow: one routed row at a
// time, so still batch invariant) and the SwiGLU ggml's; the rest is as above, which is llama.cpp's
// order too.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "model/config.h"
#include "model/weights.h"
#include "ops/aligned_buffer.h"

namespace kvaudit {

class MoeFfn {
 public:
  // Buffers for up to max_tokens tokens per Run.
  // llamacpp: llama.cpp's weight arithmetic (above), else kvaudit's exact products.
  MoeFfn(const ModelConfig& c, int max_tokens, bool llamacpp = false);

  // out[n, d_model] = the FFN of layer weights w applied to h[n, d_model] (normed input).
  void Run(const LayerWeights& w, const float* h, int n, float* out, ThreadPool& pool);

  // The last Run's routing: [n, n_experts_used] expert ids (best first) and their weights.
  const int32_t* selected() const { return selected_.data(); }
  const float* weights() const { return weights_.data(); }

  // The bytes of the buffers a MoeFfn for max_tokens tokens holds (the constructor's sizes), and
  // those this one holds: equal (tested), so that a job can plan its memory before it builds one.
  static uint64_t BufferBytes(const ModelConfig& c, int max_tokens);
  uint64_t buffer_bytes() const;

 private:
  void Route(const LayerWeights& w, const float* h, int n, ThreadPool& pool);
  void RouteToken(float* probs, int32_t* sel, float* wts) const;
  void RunExpert(const ExpertWeights& ex, int e, const float* h, int n, ThreadPool& pool);
  void Combine(int n, float* out, ThreadPool& pool) const;

  // y [n, w.rows()] = x [n, w.cols()] · Wᵀ of the router (MUL_MAT) or of an expert (MUL_MAT_ID).
  void Router(const float* x, int n, const WeightMatrix& w, float* y, ThreadPool& pool) const;
  void Expert(const float* x, int n, const WeightMatrix& w, float* y, ThreadPool& pool) const;

  const ModelConfig& c_;
  const bool llamacpp_;
  AlignedBuffer probs_;            // [C, n_experts] router logits, then their softmax
  std::vector<int32_t> selected_;  // [C, n_experts_used] expert ids, best first
  AlignedBuffer weights_;          // [C, n_experts_used] routing weights
  std::vector<int32_t> slot_of_;   // [C] per routed token of one expert: token * k + slot
  AlignedBuffer xin_;              // [C, d_model] the normed inputs of one expert's tokens
  AlignedBuffer gu_;               // [C, 2*expert_ff] gate | up of one expert
  AlignedBuffer act_;              // [C, expert_ff] silu(gate)·up
  AlignedBuffer eout_;             // [C, d_model] one expert's outputs
  AlignedBuffer slot_out_;         // [C, n_experts_used, d_model] each (token, slot)'s expert output
};

}  // namespace kvaudit
