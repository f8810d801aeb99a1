#include "model/config_layers.h"

#include <climits>
#include <cmath>

#include "io/gguf.h"

namespace kvaudit {

namespace {
Expected<double> FloatOr(const GgufFile& g, const std::string& key, double def) {
  if (!g.Has(key)) return def;
  return g.GetFloat(key);
}

Expected<int> IntOr(const GgufFile& g, const std::string& key, int def) {
  if (!g.Has(key)) return def;
  KV_ASSIGN_OR_RETURN(int64_t v, g.GetInt(key));
  if (v < 0 || v > INT32_MAX)
    return BadInput(g.label() + ": key '" + key + "' out of range; hint: the file is corrupt");
  return static_cast<int>(v);
}

// llama.cpp's load_swa_pattern: {arch}.attention.sliding_window_pattern is either one flag per layer
// or a period n (layer il is local iff il % n < n − 1; n = 0: every layer), default_period when absent.
Status ReadSwaPattern(const GgufFile& g, const std::string& arch, int default_period, ModelConfig& c) {
  const std::string key = arch + ".attention.sliding_window_pattern";
  c.sliding_layers.assign(c.n_layers, 0);
  if (g.Has(key)) {
    Expected<std::vector<int64_t>> flags = g.GetIntArray(key);
    if (flags.ok()) {
      if (static_cast<int>(flags->size()) != c.n_layers) {
        return BadInput(g.label() + ": key '" + key + "' has " + std::to_string(flags->size()) + " entries for " +
                        std::to_string(c.n_layers) + " layers; hint: the file is corrupt");
      }
      for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = (*flags)[l] != 0;
      return Status::Ok();
    }
  }
  KV_ASSIGN_OR_RETURN(int period, IntOr(g, key, default_period));
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = period == 0 || l % period < period - 1;
  return Status::Ok();
}

// The local layers' RoPE: base {arch}.rope.freq_base_swa (default: the global base for gemma2 and
// gpt-oss, 10000 for gemma3), scale: the global one for gemma2/gpt-oss, none for gemma3
// (llama_hparams rope_freq_scale_train_swa = 1).
Status ReadLocalRope(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  RopeParams local = c.rope;
  if (c.arch == Arch::kGemma3) {
    local = RopeParams{};
    local.theta = 10000.0;
  }
  KV_ASSIGN_OR_RETURN(local.theta, FloatOr(g, arch + ".rope.freq_base_swa", local.theta));
  if (c.arch == Arch::kGemma3 || g.Has(arch + ".rope.freq_base_swa")) c.rope_local = local;
  return Status::Ok();
}

// gemma_pytorch config.py (cited by llama.cpp's gemma2.cpp / gemma3.cpp): the 27B models scale
// scores by (n_embd / n_head)^-1/2, every other size by head_dim^-1/2. llama.cpp tells the 27B
// models by their layer count (46 for Gemma 2, 62 for Gemma 3).
float GemmaAttentionScale(const ModelConfig& c) {
  const bool is_27b = (c.arch == Arch::kGemma2 && c.n_layers == 46) || (c.arch == Arch::kGemma3 && c.n_layers == 62);
  const int dim = is_27b ? c.d_model / c.n_heads : c.head_dim;
  return 1.0f / std::sqrt(static_cast<float>(dim));
}

Status ReadGemma(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  c.embed_scale = true;
  c.sandwich_norms = true;
  c.gelu_ffn = true;
  c.tied_embeddings = g.FindTensor("output.weight") == nullptr;
  if (c.arch == Arch::kGemma2) {
    // gemma2.cpp: window 4096 and softcaps 50 / 30 unless the file says otherwise.
    KV_ASSIGN_OR_RETURN(c.sliding_window, IntOr(g, arch + ".attention.sliding_window", 4096));
    KV_RETURN_IF_ERROR(ReadSwaPattern(g, arch, 2, c));
    KV_ASSIGN_OR_RETURN(double attn_cap, FloatOr(g, arch + ".attn_logit_softcapping", 50.0));
    KV_ASSIGN_OR_RETURN(double final_cap, FloatOr(g, arch + ".final_logit_softcapping", 30.0));
    c.attn_softcap = static_cast<float>(attn_cap);
    c.final_softcap = static_cast<float>(final_cap);
  } else {
    // gemma3.cpp: sliding layers only when the file declares a positive window; no attention
    // softcap; a final softcap only when the key is present.
    KV_ASSIGN_OR_RETURN(c.sliding_window, IntOr(g, arch + ".attention.sliding_window", 0));
    if (c.sliding_window > 0) KV_RETURN_IF_ERROR(ReadSwaPattern(g, arch, 6, c));
    KV_ASSIGN_OR_RETURN(double final_cap, FloatOr(g, arch + ".final_logit_softcapping", 0.0));
    c.final_softcap = static_cast<float>(final_cap);
    c.qk_norm = true;
  }
  c.attn_scale = GemmaAttentionScale(c);
  if (c.sliding_window > 0) KV_RETURN_IF_ERROR(ReadLocalRope(g, arch, c));
  return Status::Ok();
}

// openai-moe.cpp: window required, pattern 2, biases on q/k/v/o, sinks, experts with biases routed
// by LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT (top-k of the raw logits, softmax over the k).
Status ReadGptOss(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  if (!g.Has(arch + ".attention.sliding_window")) {
    return BadInput(g.label() + ": missing key '" + arch +
                    ".attention.sliding_window'; hint: re-convert the model with llama.cpp's convert_hf_to_gguf.py");
  }
  KV_ASSIGN_OR_RETURN(c.sliding_window, IntOr(g, arch + ".attention.sliding_window", 0));
  KV_RETURN_IF_ERROR(ReadSwaPattern(g, arch, 2, c));
  KV_RETURN_IF_ERROR(ReadLocalRope(g, arch, c));
  KV_ASSIGN_OR_RETURN(c.expert_ff, IntOr(g, arch + ".expert_feed_forward_length", 0));
  c.moe_softmax_after_topk = true;
  c.expert_bias = true;
  c.clamped_swiglu = true;
  c.norm_topk = false;
  return Status::Ok();
}
}  // namespace

Status ReadGgufArchBlocks(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  if (c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3) return ReadGemma(g, arch, c);
  if (c.arch == Arch::kGptOss) return ReadGptOss(g, arch, c);
  return Status::Ok();
}

Status ReadGgufYarn(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  for (const char* key : {"rope.scaling.yarn_log_multiplier", "rope.scaling.yarn_ext_factor",
                          "rope.scaling.yarn_attn_factor", "rope.scaling.alpha"}) {
    if (g.Has(arch + "." + key)) {
      return BadInput(g.label() + ": key '" + arch + "." + key +
                      "' is not supported; hint: kvaudit runs YaRN with llama.cpp's defaults (ext_factor 1, the "
                      "attention factor 0.1·ln(factor) + 1)");
    }
  }
  c.rope.type = RopeType::kYarn;
  KV_ASSIGN_OR_RETURN(c.rope.factor, g.GetFloat(arch + ".rope.scaling.factor"));
  KV_ASSIGN_OR_RETURN(c.rope.original_max_position_embeddings,
                      IntOr(g, arch + ".rope.scaling.original_context_length", c.max_ctx));
  KV_ASSIGN_OR_RETURN(c.rope.beta_fast, FloatOr(g, arch + ".rope.scaling.yarn_beta_fast", 32.0));
  KV_ASSIGN_OR_RETURN(c.rope.beta_slow, FloatOr(g, arch + ".rope.scaling.yarn_beta_slow", 1.0));
  KV_ASSIGN_OR_RETURN(double attn_factor, FloatOr(g, arch + ".rope.scaling.attn_factor", 1.0));
  // llama_context: yarn_attn_factor = get_mscale(factor) / (1 + 0.1·ln factor) = 1 and ggml's
  // rope_yarn multiplies by 1 + 0.1·ln(1/freq_scale): the product, times rope_attn_factor.
  c.rope.attn_factor = (c.rope.factor > 1 ? 1.0 + 0.1 * std::log(c.rope.factor) : 1.0) * attn_factor;
  c.rope.yarn_round_dims = true;
  return Status::Ok();
}

}  // namespace kvaudit
