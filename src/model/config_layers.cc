#include "model/config_layers.h"

#include <climits>
#include <cmath>
#include <utility>

#include "base/json_text.h"
#include "io/gguf.h"

namespace kvaudit {

namespace {
Expected<double> FloatOr(const GgufFile& g, const std::string& key, double def) {
  if (!g.Has(key)) return def;
  return g.GetFloat(key);
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
  KV_ASSIGN_OR_RETURN(int period, GgufIntOr(g, key, default_period));
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
    KV_ASSIGN_OR_RETURN(c.sliding_window, GgufIntOr(g, arch + ".attention.sliding_window", 4096));
    KV_RETURN_IF_ERROR(ReadSwaPattern(g, arch, 2, c));
    KV_ASSIGN_OR_RETURN(double attn_cap, FloatOr(g, arch + ".attn_logit_softcapping", 50.0));
    KV_ASSIGN_OR_RETURN(double final_cap, FloatOr(g, arch + ".final_logit_softcapping", 30.0));
    c.attn_softcap = static_cast<float>(attn_cap);
    c.final_softcap = static_cast<float>(final_cap);
  } else {
    // gemma3.cpp: sliding layers only when the file declares a positive window; no attention
    // softcap; a final softcap only when the key is present.
    KV_ASSIGN_OR_RETURN(c.sliding_window, GgufIntOr(g, arch + ".attention.sliding_window", 0));
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
  KV_ASSIGN_OR_RETURN(c.sliding_window, GgufIntOr(g, arch + ".attention.sliding_window", 0));
  KV_RETURN_IF_ERROR(ReadSwaPattern(g, arch, 2, c));
  KV_RETURN_IF_ERROR(ReadLocalRope(g, arch, c));
  KV_ASSIGN_OR_RETURN(c.expert_ff, GgufIntOr(g, arch + ".expert_feed_forward_length", 0));
  c.moe_softmax_after_topk = true;
  c.expert_bias = true;
  c.clamped_swiglu = true;
  c.norm_topk = false;
  return Status::Ok();
}
// A softcap key: absent = the architecture's default, null = none.
Expected<float> HfSoftcap(const JsonReader& r, const std::string& key, double def) {
  if (r.j.contains(key) && r.j.at(key).is_null()) return 0.0f;
  KV_ASSIGN_OR_RETURN(double v, r.Num(r.j, key, def));
  return static_cast<float>(v);
}

}  // namespace

// layer_types (transformers >= 4.53: "sliding_attention" / "full_attention" per layer), else the
// architecture's pattern: Gemma 2 even layers local (Gemma2DecoderLayer is_sliding = not layer_idx
// % 2), Gemma 3 every sliding_window_pattern-th layer global ((layer_idx + 1) % pattern != 0).
Status ReadHfLayerTypes(const JsonReader& r, ModelConfig& c) {
  c.sliding_layers.assign(c.n_layers, 0);
  if (r.Present(r.j, "layer_types")) {
    const Json& lt = r.j.at("layer_types");
    if (!lt.is_array() || static_cast<int>(lt.size()) != c.n_layers) {
      return r.Invalid("layer_types", "a list of " + std::to_string(c.n_layers) + " layer types");
    }
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string t = lt[l].is_string() ? lt[l].get<std::string>() : "";
      if (t != "sliding_attention" && t != "full_attention") {
        return r.Invalid("layer_types[" + std::to_string(l) + "]", "\"sliding_attention\" or \"full_attention\"");
      }
      c.sliding_layers[l] = t == "sliding_attention";
    }
    return Status::Ok();
  }
  KV_ASSIGN_OR_RETURN(int pattern, r.Int(r.j, "sliding_window_pattern", c.arch == Arch::kGemma2 ? 2 : 6));
  if (pattern <= 0) return r.Invalid("sliding_window_pattern", "a positive integer");
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = (l + 1) % pattern != 0;
  return Status::Ok();
}

Status ReadHfGemma(const JsonReader& r, ModelConfig& c) {
  c.embed_scale = c.sandwich_norms = c.gelu_ffn = true;
  KV_ASSIGN_OR_RETURN(c.tied_embeddings, r.Bool(r.j, "tie_word_embeddings", true));
  KV_ASSIGN_OR_RETURN(double scalar, r.Num(r.j, "query_pre_attn_scalar", 256.0));
  if (!(scalar > 0)) return r.Invalid("query_pre_attn_scalar", "positive");
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(scalar));  // Gemma2Attention: scaling = scalar**-0.5
  const bool g2 = c.arch == Arch::kGemma2;
  KV_ASSIGN_OR_RETURN(c.attn_softcap, HfSoftcap(r, "attn_logit_softcapping", g2 ? 50.0 : 0.0));
  KV_ASSIGN_OR_RETURN(c.final_softcap, HfSoftcap(r, "final_logit_softcapping", g2 ? 30.0 : 0.0));
  KV_ASSIGN_OR_RETURN(c.sliding_window, r.Int(r.j, "sliding_window", 4096));
  if (c.sliding_window > 0) KV_RETURN_IF_ERROR(ReadHfLayerTypes(r, c));
  if (!g2) {
    c.qk_norm = true;
    // Gemma3TextModel rotary_emb_local: default RoPE at rope_local_base_freq (transformers v4), unless
    // rope_parameters gave the sliding layers' own (v5: ReadRope).
    if (!c.rope_local) {
      RopeParams local;
      KV_ASSIGN_OR_RETURN(local.theta, r.Num(r.j, "rope_local_base_freq", 10000.0));
      c.rope_local = local;
    }
    if (c.sliding_window <= 0) c.rope_local.reset();
  }
  return Status::Ok();
}

namespace {
// YaRN's attention factor (transformers _compute_yarn_parameters get_mscale): 0.1·m·ln(s) + 1 for a
// scale s > 1, else 1.
double YarnMscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

// A YaRN beta: transformers takes `rope_scaling.get(key) or default`, so null and 0 mean the default.
Expected<double> YarnBeta(const JsonReader& r, const Json& p, const std::string& where, const std::string& key,
                          double def) {
  KV_ASSIGN_OR_RETURN(double v, r.Num(p, key, def));
  if (v == 0) return def;
  if (!(v > 0)) return r.Invalid(where + "." + key, "a positive number");
  return v;
}

// experts_per_token is the name of gpt-oss's own config (openai/gpt-oss-20b's config.json carries
// both); transformers reads num_experts_per_tok only, so a file where they disagree is ambiguous.
Status ReadGptOssTopK(const JsonReader& r, ModelConfig& c) {
  const bool hf = r.Present(r.j, "num_experts_per_tok"), own = r.Present(r.j, "experts_per_token");
  if (!hf && !own) return r.Missing("num_experts_per_tok");
  KV_ASSIGN_OR_RETURN(int k_own, r.Int(r.j, "experts_per_token", 0));
  KV_ASSIGN_OR_RETURN(c.n_experts_used, r.Int(r.j, "num_experts_per_tok", k_own));
  if (hf && own && k_own != c.n_experts_used) {
    return BadInput(r.path + ": num_experts_per_tok " + std::to_string(c.n_experts_used) + " and experts_per_token " +
                    std::to_string(k_own) +
                    " disagree; hint: transformers routes by num_experts_per_tok: make "
                    "experts_per_token equal or remove it");
  }
  return Status::Ok();
}
}  // namespace

// transformers modeling_rope_utils.py _compute_yarn_parameters (the version with rope_scaling.truncate,
// which gpt-oss's config brought in v4.55; before it the dims were always rounded): factor; the
// original context (original_max_position_embeddings, else max_position_embeddings); beta_fast /
// beta_slow (32 / 1); truncate (default true) floors/ceils the correction dims, false keeps them
// fractional; attention_factor, else get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
// when both are set, else get_mscale(factor).
Status ReadHfYarn(const JsonReader& r, const Json& p, const std::string& where, ModelConfig& c) {
  c.rope.type = RopeType::kYarn;
  KV_ASSIGN_OR_RETURN(c.rope.factor, r.Num(p, "factor"));
  KV_ASSIGN_OR_RETURN(int ctx, r.Int(p, "original_max_position_embeddings", 0));
  c.rope.original_max_position_embeddings = ctx > 0 ? ctx : c.max_ctx;
  KV_ASSIGN_OR_RETURN(c.rope.beta_fast, YarnBeta(r, p, where, "beta_fast", 32.0));
  KV_ASSIGN_OR_RETURN(c.rope.beta_slow, YarnBeta(r, p, where, "beta_slow", 1.0));
  KV_ASSIGN_OR_RETURN(c.rope.yarn_round_dims, r.Bool(p, "truncate", true));
  KV_ASSIGN_OR_RETURN(double mscale, r.Num(p, "mscale", 0.0));
  KV_ASSIGN_OR_RETURN(double mscale_all_dim, r.Num(p, "mscale_all_dim", 0.0));
  c.rope.attn_factor = mscale != 0 && mscale_all_dim != 0
                           ? YarnMscale(c.rope.factor, mscale) / YarnMscale(c.rope.factor, mscale_all_dim)
                           : YarnMscale(c.rope.factor, 1.0);
  KV_ASSIGN_OR_RETURN(c.rope.attn_factor, r.Num(p, "attention_factor", c.rope.attn_factor));
  if (!(c.rope.attn_factor > 0)) return r.Invalid(where + ".attention_factor", "a positive number");
  return Status::Ok();
}

// gpt-oss (transformers configuration_gpt_oss.py @828a27fd, modeling_gpt_oss.py @6edf5b31):
// num_local_experts experts of width intermediate_size; layer_types, else sliding on even layers
// ("sliding_attention" if (i + 1) % 2); attention_bias is forced true by GptOssConfig whatever the
// file says. swiglu_limit: GptOssExperts hard-codes 7.0 while the MXFP4 kernel path
// (integrations/mxfp4.py @0189b1d0 Mxfp4GptOssExperts) reads config.swiglu_limit, so only 7 means one
// computation; kvaudit's clamped SwiGLU is that one.
Status ReadHfGptOss(const JsonReader& r, ModelConfig& c) {
  KV_ASSIGN_OR_RETURN(c.n_experts, r.Int(r.j, "num_local_experts"));
  KV_RETURN_IF_ERROR(ReadGptOssTopK(r, c));
  c.expert_ff = c.d_ff;
  KV_ASSIGN_OR_RETURN(double limit, r.Num(r.j, "swiglu_limit", 7.0));
  if (limit != 7.0) {
    return BadInput(r.path + ": swiglu_limit " + JsonText(r.j.at("swiglu_limit")) +
                    " is not supported; hint: kvaudit runs gpt-oss's SwiGLU clamped at 7, the value transformers' "
                    "GptOssExperts hard-codes");
  }
  c.attn_qkv_bias = c.attn_o_bias = true;
  c.moe_softmax_after_topk = c.expert_bias = c.clamped_swiglu = true;
  c.norm_topk = false;
  KV_ASSIGN_OR_RETURN(c.sliding_window, r.Int(r.j, "sliding_window", 128));
  if (c.sliding_window <= 0) return r.Invalid("sliding_window", "a positive integer (gpt-oss's local layers' window)");
  if (r.Present(r.j, "layer_types")) return ReadHfLayerTypes(r, c);
  c.sliding_layers.assign(c.n_layers, 0);
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers[l] = (l + 1) % 2 != 0;
  return Status::Ok();
}

Expected<int> GgufIntOr(const GgufFile& g, const std::string& key, int def) {
  if (!g.Has(key)) return def;
  KV_ASSIGN_OR_RETURN(int64_t v, g.GetInt(key));
  if (v < 0 || v > INT32_MAX)
    return BadInput(g.label() + ": key '" + key + "' out of range; hint: the file is corrupt");
  return static_cast<int>(v);
}

Status ReadGgufArchBlocks(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  if (c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3) return ReadGemma(g, arch, c);
  if (c.arch == Arch::kGptOss) return ReadGptOss(g, arch, c);
  return Status::Ok();
}

Status ReadGgufYarn(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  for (const char* key : {"rope.scaling.yarn_log_multiplier", "rope.scaling.yarn_ext_factor",
                          "rope.scaling.yarn_attn_factor", "rope.scaling.alpha", "rope.scaling.attn_factor"}) {
    if (g.Has(arch + "." + key)) {
      return BadInput(g.label() + ": key '" + arch + "." + key +
                      "' is not supported; hint: kvaudit runs YaRN with llama.cpp's defaults (ext_factor 1, the "
                      "attention factor 0.1·ln(factor) + 1)");
    }
  }
  c.rope.type = RopeType::kYarn;
  KV_ASSIGN_OR_RETURN(c.rope.factor, g.GetFloat(arch + ".rope.scaling.factor"));
  KV_ASSIGN_OR_RETURN(c.rope.original_max_position_embeddings,
                      GgufIntOr(g, arch + ".rope.scaling.original_context_length", c.max_ctx));
  // llama.cpp's gpt-oss loader reads no beta keys (openai-moe.cpp @de3ff815): it runs 32 and 1,
  // what convert_hf_to_gguf.py writes from gpt-oss's config. A file saying otherwise is refused
  // rather than run differently from llama.cpp.
  c.rope.beta_fast = 32.0, c.rope.beta_slow = 1.0;
  for (const auto& [key, used] : {std::pair<std::string, double>{"yarn_beta_fast", 32.0}, {"yarn_beta_slow", 1.0}}) {
    KV_ASSIGN_OR_RETURN(double v, FloatOr(g, arch + ".rope.scaling." + key, used));
    if (v != used) {
      return BadInput(g.label() + ": key '" + arch + ".rope.scaling." + key + "' = " + std::to_string(v) +
                      ", but llama.cpp runs " + arch + " with " + std::to_string(used) +
                      "; hint: kvaudit follows llama.cpp and refuses the file");
    }
  }
  // llama_context: yarn_attn_factor = get_mscale(factor) / (1 + 0.1·ln factor) = 1 and ggml's
  // rope_yarn multiplies by 1 + 0.1·ln(1/freq_scale): the product.
  c.rope.attn_factor = c.rope.factor > 1 ? 1.0 + 0.1 * std::log(c.rope.factor) : 1.0;
  c.rope.yarn_round_dims = true;
  return Status::Ok();
}

}  // namespace kvaudit
