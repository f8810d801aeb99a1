// ModelConfig: the plain-data description of a decoder-only transformer, read once from a Hugging
// Face config.json or GGUF metadata and validated there, so the rest of the engine trusts it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
// Gemma 2/3 (docs/models-gemma.md) and gpt-oss (docs/models-gpt-oss.md) add the per-layer
// attention and the FFN variants below.
enum class Arch { kLlama, kMistral, kQwen2, kQwen3, kQwen3Moe, kMixtral, kPhi3, kGemma2, kGemma3, kGptOss };
const char* ArchName(Arch a);

// The KV-cache scales a quantized checkpoint carries: one k_scale and one v_scale per attention
// layer (per tensor, or per KV head from llm-compressor's attn_head strategy), which an engine that
// loads the checkpoint quantizes its fp8/nvfp4 cache with (model/kv_scales.h reads them).
struct CheckpointKvScales {
  int per_layer = 0;        // 1 (per tensor) or n_kv_heads; 0: the checkpoint has none
  std::vector<float> k, v;  // [n_layers * per_layer]
  std::string source;       // the tensors' names, e.g. "model.layers.N.self_attn.k_scale / v_scale"
  bool empty() const { return per_layer == 0; }
  float K(int layer, int kv_head) const {
    return k[static_cast<size_t>(layer) * per_layer + (per_layer > 1 ? kv_head : 0)];
  }
  float V(int layer, int kv_head) const {
    return v[static_cast<size_t>(layer) * per_layer + (per_layer > 1 ? kv_head : 0)];
  }
};

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
  // [n_layers] 1 = the layer attends through sliding_window, 0 = globally; empty = every layer
  // alike (all sliding when sliding_window > 0). Gemma 2 and gpt-oss alternate, Gemma 3 is 5:1.
  std::vector<uint8_t> sliding_layers;
  // The sliding layers' RoPE where it differs from the global layers' (Gemma 3: base 10000 unscaled
  // locally, 1e6 linearly scaled globally); unset = `rope` on every layer.
  std::optional<RopeParams> rope_local;
  float attn_scale = 0.0f;     // scores scale; 0 = 1/sqrt(head_dim) (Gemma: query_pre_attn_scalar^-1/2)
  float attn_softcap = 0.0f;   // Gemma 2: scores s -> c·tanh(s/c) after scaling, before the mask; 0 = none
  float final_softcap = 0.0f;  // Gemma 2: logits z -> c·tanh(z/c); 0 = none
  // gpt-oss: a learned logit per query head joins each softmax's denominator (filled from the
  // weights by Model::Load): [n_layers, n_heads], empty = no sinks.
  std::vector<float> attn_sinks;
  // The checkpoint's k_scale/v_scale tensors (filled by Model::Load from safetensors; GGUF has none).
  CheckpointKvScales kv_scales;
  bool sandwich_norms = false;  // Gemma: post_attention_norm / post_ffw_norm on each sublayer's output
  bool embed_scale = false;     // Gemma: embeddings × sqrt(d_model) (rounded to f32)
  bool gelu_ffn = false;        // Gemma: GELU(tanh) gate in place of SiLU
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
  // gpt-oss (docs/models-gpt-oss.md): the top-k of the raw router logits (with a router bias), then
  // a softmax over those k; experts with biases and the clamped SwiGLU
  // min(g,7)·σ(1.702·min(g,7))·(clamp(u,−7,7)+1).
  bool moe_softmax_after_topk = false;
  bool expert_bias = false;
  bool clamped_swiglu = false;

  bool is_moe() const { return n_experts > 0; }
  bool is_sliding(int layer) const {
    return sliding_layers.empty() ? sliding_window > 0 : sliding_window > 0 && sliding_layers[layer] != 0;
  }
  int layer_window(int layer) const { return is_sliding(layer) ? sliding_window : 0; }
  const RopeParams& layer_rope(int layer) const { return rope_local && is_sliding(layer) ? *rope_local : rope; }
  int n_sliding_layers() const {  // inline: kv/config reads it without linking model/
    int n = 0;
    for (int l = 0; l < n_layers; ++l) n += is_sliding(l);
    return n;
  }

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

// LongRoPE's choice at a run's context, in one line naming the set, the original context and the
// engine flags that make the same choice (docs/models-phi3.md); "" for any other RoPE.
std::string DescribeLongRope(const ModelConfig& c, int context);

// The f16 KV cache per token: every layer's K and V, 2 bytes per element. Every "of f16" figure
// (audit, eval, recommend, --budget 0.5xf16) is relative to it.
uint64_t F16KvBytesPerToken(int n_layers, int n_kv_heads, int head_dim);
inline uint64_t F16BytesPerToken(const ModelConfig& c) {
  return F16KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim);
}

}  // namespace kvaudit
