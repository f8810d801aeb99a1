// ModelConfig: the plain-data description of a decoder-only transformer, read once from a Hugging
// Face config.json or GGUF metadata and validated there, so the rest of the engine trusts it.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "ops/rope.h"

namespace kvaudit {

class GgufFile;

// Architectures with identical dataflow up to the flags below (transformers modeling_llama.py,
// modeling_mistral.py, modeling_qwen2.py, modeling_qwen3.py, modeling_qwen3_moe.py,
// modeling_mixtral.py, modeling_phi3.py). The mixture-of-experts ones replace the FFN by routed
// experts (model/moe.h); their attention is qwen3's (kQwen3Moe) and mistral's (kMixtral). A
// llama.cpp GGUF of a Mixtral model says arch 'llama' with expert keys: kLlama with n_experts > 0.
// Phi-3 and Phi-4 are Llama's dataflow with q|k|v and gate|up each stored as one fused tensor.
enum class Arch { kLlama, kMistral, kQwen2, kQwen3, kQwen3Moe, kMixtral, kPhi3 };
const char* ArchName(Arch a);

struct ModelConfig {
  Arch arch = Arch::kLlama;
  int n_layers = 0;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_ff = 0;
  int vocab_size = 0;
  int max_ctx = 0;  // max_position_embeddings / {arch}.context_length
  float rms_eps = 1e-6f;
  RopeParams rope;
  bool attn_qkv_bias = false;  // qwen2 (always), llama/qwen3 with attention_bias: q/k/v biases
  bool attn_o_bias = false;    // llama/qwen3 with attention_bias: o_proj bias (qwen2 never)
  bool qk_norm = false;        // qwen3: per-head RMSNorm of q and k before RoPE
  bool tied_embeddings = false;
  int sliding_window = 0;  // 0 = full causal attention; else keys [p − window + 1, p]
  // A window the file declares but the engine kvaudit follows for it does not apply (a phi3 GGUF's
  // attention.sliding_window: llama.cpp runs Phi-3 without one); shown by `info`, never applied.
  int unapplied_sliding_window = 0;
  int bos_id = -1;  // -1 when the model has none
  int eos_id = -1;
  // Mixture of experts (docs/models-moe.md): every layer's FFN is n_experts SiLU-gated experts of
  // width expert_ff, n_experts_used of them per token, chosen by a softmax router (top-k, weights
  // renormalised to sum 1 when norm_topk). 0 experts = the dense FFN of width d_ff.
  int n_experts = 0;
  int n_experts_used = 0;
  int expert_ff = 0;
  bool norm_topk = false;

  bool is_moe() const { return n_experts > 0; }

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  // Checks the shape relations every kernel relies on; `source` names the file in messages.
  Status Validate(const std::string& source) const;
  Status ValidateMoe(const std::string& source) const;  // the expert fields (part of Validate)
};

// config.json of a Hugging Face model directory (transformers v4 rope_theta/rope_scaling and v5
// rope_parameters). Unknown architectures and missing/invalid keys are BadInput naming the key.
Expected<ModelConfig> ConfigFromHfJson(const std::string& path);

// GGUF metadata ({arch}.block_count, ...); llama3 RoPE comes from the rope_freqs.weight tensor.
Expected<ModelConfig> ConfigFromGguf(const GgufFile& gguf);

// The f16 KV cache per token: every layer's K and V, 2 bytes per element. Every "of f16" figure
// (audit, eval, recommend, --budget 0.5xf16) is relative to it.
uint64_t F16KvBytesPerToken(int n_layers, int n_kv_heads, int head_dim);
inline uint64_t F16BytesPerToken(const ModelConfig& c) {
  return F16KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim);
}

}  // namespace kvaudit
