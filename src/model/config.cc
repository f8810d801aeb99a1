#include "model/config.h"

#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "base/json_text.h"
#include "io/dequantize.h"
#include "io/gguf.h"
#include "model/config_json_reader.h"
#include "model/config_layers.h"

namespace kvaudit {

const char* ArchName(Arch a) {
  switch (a) {
    case Arch::kLlama: return "llama";
    case Arch::kMistral: return "mistral";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
    case Arch::kQwen3Moe: return "qwen3moe";
    case Arch::kMixtral: return "mixtral";
    case Arch::kPhi3: return "phi3";
    case Arch::kGemma2: return "gemma2";
    case Arch::kGemma3: return "gemma3";
    case Arch::kGptOss: return "gpt-oss";
  }
  return "?";
}

uint64_t F16KvBytesPerToken(int n_layers, int n_kv_heads, int head_dim) {
  return 2ull * 2ull * static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(n_kv_heads) *
         static_cast<uint64_t>(head_dim);
}

Status ModelConfig::Validate(const std::string& src) const {
  auto bad = [&](const std::string& what, const std::string& hint) {
    return BadInput(src + ": " + what + "; hint: " + hint);
  };
  if (n_layers <= 0) return bad("n_layers must be positive", "check num_hidden_layers / block_count");
  if (d_model <= 0) return bad("hidden size must be positive", "check hidden_size / embedding_length");
  if (n_heads <= 0 || n_kv_heads <= 0)
    return bad("head counts must be positive", "check num_attention_heads / num_key_value_heads");
  if (n_heads % n_kv_heads != 0) {
    return bad("num_attention_heads " + std::to_string(n_heads) + " is not a multiple of num_key_value_heads " +
                   std::to_string(n_kv_heads),
               "grouped-query attention needs whole groups");
  }
  if (head_dim <= 0 || head_dim % 2 != 0)
    return bad("head_dim " + std::to_string(head_dim) + " must be positive and even", "RoPE rotates pairs");
  if (d_ff <= 0) return bad("intermediate_size must be positive", "check intermediate_size / feed_forward_length");
  if (vocab_size <= 0) return bad("vocab_size must be positive", "check vocab_size");
  if (max_ctx <= 0) return bad("context length must be positive", "check max_position_embeddings / context_length");
  if (!(rms_eps > 0)) return bad("rms_norm_eps must be positive", "check rms_norm_eps");
  if (!(rope.theta > 0) || !(rope.factor > 0))
    return bad("rope theta and factor must be positive", "check rope_theta / rope scaling factor");
  if (rope.type == RopeType::kLlama3 && !(rope.high_freq_factor > rope.low_freq_factor)) {
    return bad("llama3 rope needs high_freq_factor > low_freq_factor", "check rope_parameters");
  }
  if (rope.dims < 0 || rope.dims > head_dim || rope.dims % 2 != 0)
    return bad("rotary dimensions must be even and at most head_dim", "check partial_rotary_factor");
  const size_t half = static_cast<size_t>(rope.RotatedDims(head_dim) / 2);
  if (rope.is_longrope() && (rope.long_factors.size() != half || rope.short_factors.size() != half ||
                             rope.original_max_position_embeddings <= 0)) {
    return bad("LongRoPE needs rotary dims/2 long and short factors and a positive original context",
               "check rope_scaling.long_factor / short_factor / original_max_position_embeddings");
  }
  if (sliding_window < 0) return bad("sliding_window must be >= 0", "check sliding_window");
  if (!sliding_layers.empty() && static_cast<int>(sliding_layers.size()) != n_layers) {
    return bad("the sliding-window pattern names " + std::to_string(sliding_layers.size()) + " layers, not " +
                   std::to_string(n_layers),
               "check layer_types / attention.sliding_window_pattern");
  }
  if (!attn_sinks.empty() && static_cast<int64_t>(attn_sinks.size()) != static_cast<int64_t>(n_layers) * n_heads)
    return bad("attention sinks must be one per layer and head", "check the sinks tensors");
  if (attn_scale < 0 || attn_softcap < 0 || final_softcap < 0)
    return bad("attention scale and softcaps must be >= 0", "check query_pre_attn_scalar / *_softcapping");
  return ValidateMoe(src);
}

Status ModelConfig::ValidateMoe(const std::string& src) const {
  auto bad = [&](const std::string& what, const std::string& hint) {
    return BadInput(src + ": " + what + "; hint: " + hint);
  };
  const bool moe_arch = arch == Arch::kQwen3Moe || arch == Arch::kMixtral || arch == Arch::kGptOss;
  if (n_experts < 0 || (moe_arch && n_experts == 0)) {
    return bad("expert count " + std::to_string(n_experts) + " must be positive for " + ArchName(arch),
               "check num_experts / num_local_experts / expert_count");
  }
  if (n_experts == 0) {
    if (n_experts_used != 0) return bad("experts used per token without experts", "check expert_count");
    return Status::Ok();
  }
  if (n_experts_used <= 0 || n_experts_used > n_experts) {
    return bad("experts used per token " + std::to_string(n_experts_used) + " must be in [1, " +
                   std::to_string(n_experts) + "] (the expert count)",
               "check num_experts_per_tok / expert_used_count");
  }
  if (expert_ff <= 0) {
    return bad("expert FFN size must be positive",
               "check moe_intermediate_size / intermediate_size / expert_feed_forward_length");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- Hugging Face config.json
namespace {
Expected<Arch> ArchFromHf(const Json& j, const std::string& path) {
  std::string name;
  if (j.contains("model_type") && j["model_type"].is_string()) {
    name = j["model_type"].get<std::string>();
  } else if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
             j["architectures"][0].is_string()) {
    name = j["architectures"][0].get<std::string>();
  } else {
    return BadInput(path +
                    ": missing key 'model_type' (and 'architectures'); hint: is this a transformers config.json?");
  }
  if (name == "llama" || name == "LlamaForCausalLM") return Arch::kLlama;
  if (name == "mistral" || name == "MistralForCausalLM") return Arch::kMistral;
  if (name == "qwen2" || name == "Qwen2ForCausalLM") return Arch::kQwen2;
  if (name == "qwen3" || name == "Qwen3ForCausalLM") return Arch::kQwen3;
  if (name == "qwen3_moe" || name == "Qwen3MoeForCausalLM") return Arch::kQwen3Moe;
  if (name == "mixtral" || name == "MixtralForCausalLM") return Arch::kMixtral;
  if (name == "phi3" || name == "Phi3ForCausalLM") return Arch::kPhi3;
  if (name == "gemma2" || name == "Gemma2ForCausalLM") return Arch::kGemma2;
  if (name == "gemma3_text" || name == "Gemma3ForCausalLM") return Arch::kGemma3;
  if (name == "gpt_oss" || name == "GptOssForCausalLM") return Arch::kGptOss;
  if (name == "gemma3" || name == "Gemma3ForConditionalGeneration") {
    return BadInput(path + ": model_type '" + name +
                    "' is Gemma 3 with its vision tower; hint: kvaudit runs the text model: convert it with "
                    "llama.cpp's convert_hf_to_gguf.py (which keeps the text weights) and pass the GGUF");
  }
  return BadInput(path + ": unsupported architecture '" + name +
                  "'; hint: kvaudit runs llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, phi3, gemma2, "
                  "gemma3_text and gpt_oss models");
}

// partial_rotary_factor (Phi-4-mini: 0.75; top level in transformers v4, inside rope_parameters in
// v5): transformers rotates the first int(head_dim · factor) dims of each head (modeling_phi3.py
// apply_rotary_pos_emb: q[..., :rotary_dim]); kvaudit runs it for Phi-3 only, the one architecture
// checked against an engine (docs/models-phi3.md).
Status SetPartialRotary(const JsonReader& r, const Json& o, const std::string& where, ModelConfig& c) {
  KV_ASSIGN_OR_RETURN(double rotary, r.Num(o, "partial_rotary_factor", 1.0));
  if (rotary == 1.0) return Status::Ok();
  const int dims = static_cast<int>(c.head_dim * rotary);
  if (c.arch != Arch::kPhi3 || !(rotary > 0 && rotary < 1) || dims % 2 != 0 || dims == 0) {
    return BadInput(r.path + ": " + where + "partial_rotary_factor " + JsonText(o.at("partial_rotary_factor")) +
                    " for " + ArchName(c.arch) + " (head_dim " + std::to_string(c.head_dim) +
                    ") is not supported; hint: kvaudit rotates part of each head for phi3 only, an even number of "
                    "dimensions");
  }
  c.rope.dims = dims;
  return Status::Ok();
}

// One RoPE object (or none: the default at rope_theta) into c.rope.
Status ReadRopeObject(const JsonReader& r, const Json* params, const std::string& where, ModelConfig& c) {
  if (params && !params->is_object()) return r.Invalid(where, "an object");
  if (params && (params->contains("full_attention") || params->contains("sliding_attention"))) {
    return BadInput(r.path + ": " + where +
                    " per layer type; hint: transformers v5 writes those entries in rope_parameters only");
  }
  if (params) KV_RETURN_IF_ERROR(SetPartialRotary(r, *params, where + ".", c));
  KV_ASSIGN_OR_RETURN(double theta, r.Num(r.j, "rope_theta", 10000.0));
  std::string type = "default";
  if (params) {
    if (r.Present(*params, "rope_theta")) {
      KV_ASSIGN_OR_RETURN(theta, r.Num(*params, "rope_theta"));
    }
    for (const char* key : {"rope_type", "type"}) {
      if (r.Present(*params, key)) {
        if (!params->at(key).is_string()) return r.Invalid(where + "." + key, "a string");
        type = params->at(key).get<std::string>();
        break;
      }
    }
  }
  c.rope.theta = theta;
  if (type == "default") {
    c.rope.type = RopeType::kDefault;
    return Status::Ok();
  }
  if (type == "yarn") return ReadHfYarn(r, *params, where, c);
  // "su" is LongRoPE's earlier name (Phi-3's first config.json files).
  if (type == "longrope" || type == "su") return ReadHfLongRope(r, *params, where, c);
  if (type != "linear" && type != "llama3") {
    return BadInput(r.path + ": unsupported rope type '" + type + "' in " + where +
                    "; hint: kvaudit supports default, linear, llama3, yarn and longrope RoPE");
  }
  KV_ASSIGN_OR_RETURN(c.rope.factor, r.Num(*params, "factor"));
  if (type == "linear") {
    c.rope.type = RopeType::kLinear;
    return Status::Ok();
  }
  c.rope.type = RopeType::kLlama3;
  KV_ASSIGN_OR_RETURN(c.rope.low_freq_factor, r.Num(*params, "low_freq_factor"));
  KV_ASSIGN_OR_RETURN(c.rope.high_freq_factor, r.Num(*params, "high_freq_factor"));
  KV_ASSIGN_OR_RETURN(c.rope.original_max_position_embeddings, r.Int(*params, "original_max_position_embeddings"));
  return Status::Ok();
}

// transformers v5 spells a model with two RoPEs per layer type (Gemma 3: rope_parameters
// {full_attention: {rope_type linear, factor 8, rope_theta 1e6}, sliding_attention: {rope_type
// default, rope_theta 1e4}}; modeling_rope_utils.py standardize_rope_params): the full one is the
// model's RoPE, the sliding one its sliding layers' (rope_local).
Status ReadRopePerLayerType(const JsonReader& r, const Json& params, ModelConfig& c) {
  for (const auto& [key, value] : params.items()) {
    if (key != "full_attention" && key != "sliding_attention") {
      return BadInput(r.path + ": rope_parameters." + key +
                      " beside per-layer-type entries; hint: transformers v5 keys them full_attention and "
                      "sliding_attention only");
    }
  }
  if (!params.contains("full_attention")) return r.Invalid("rope_parameters.full_attention", "an object");
  KV_RETURN_IF_ERROR(ReadRopeObject(r, &params.at("full_attention"), "rope_parameters.full_attention", c));
  if (params.contains("sliding_attention")) {
    ModelConfig sliding = c;
    KV_RETURN_IF_ERROR(
        ReadRopeObject(r, &params.at("sliding_attention"), "rope_parameters.sliding_attention", sliding));
    c.rope_local = sliding.rope;
  }
  return Status::Ok();
}

Status ReadRope(const JsonReader& r, ModelConfig& c) {
  // v5: rope_parameters {rope_theta, rope_type, ...}, or one such object per layer type; v4:
  // rope_theta + rope_scaling {type|rope_type, ...}.
  if (r.Present(r.j, "rope_parameters")) {
    const Json& params = r.j.at("rope_parameters");
    if (params.is_object() && (params.contains("full_attention") || params.contains("sliding_attention")))
      return ReadRopePerLayerType(r, params, c);
    return ReadRopeObject(r, &params, "rope_parameters", c);
  }
  if (r.Present(r.j, "rope_scaling")) return ReadRopeObject(r, &r.j.at("rope_scaling"), "rope_scaling", c);
  return ReadRopeObject(r, nullptr, "rope_parameters", c);
}

Status ReadSlidingWindow(const JsonReader& r, ModelConfig& c) {
  KV_ASSIGN_OR_RETURN(int window, r.Int(r.j, "sliding_window", 0));
  // Mistral, Mixtral and Phi-3 apply sliding_window whenever it is set (transformers
  // MistralAttention, Phi3Attention: sliding_window=config.sliding_window; Phi-3-mini-4k declares
  // 2047); the Qwens only with use_sliding_window.
  bool use = c.arch == Arch::kMistral || c.arch == Arch::kMixtral || c.arch == Arch::kPhi3;
  const bool qwen = c.arch == Arch::kQwen2 || c.arch == Arch::kQwen3 || c.arch == Arch::kQwen3Moe;
  if (qwen) {
    KV_ASSIGN_OR_RETURN(use, r.Bool(r.j, "use_sliding_window", false));
  }
  if (r.Present(r.j, "layer_types")) {
    // transformers >= 4.53 spells the per-layer choice out (config_layers.h ReadHfLayerTypes).
    c.sliding_window = window;
    KV_RETURN_IF_ERROR(ReadHfLayerTypes(r, c));
    const int n_sliding = c.n_sliding_layers();
    if (n_sliding == 0) c.sliding_window = 0;
    if (n_sliding == 0 || n_sliding == c.n_layers) c.sliding_layers.clear();  // every layer alike
    return Status::Ok();
  }
  if (use && qwen) {
    // Qwen2Config: layers at or after max_window_layers slide, the ones before attend globally.
    KV_ASSIGN_OR_RETURN(int max_window_layers, r.Int(r.j, "max_window_layers", c.n_layers));
    if (max_window_layers >= c.n_layers) {
      use = false;
    } else if (max_window_layers > 0) {
      c.sliding_layers.assign(c.n_layers, 0);
      for (int l = max_window_layers; l < c.n_layers; ++l) c.sliding_layers[l] = 1;
    }
  }
  c.sliding_window = use ? window : 0;
  return Status::Ok();
}

// Qwen3-MoE (transformers configuration_qwen3_moe.py / modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock):
// every layer sparse unless decoder_sparse_step or mlp_only_layers say otherwise, which kvaudit
// does not implement and so refuses.
Status ReadQwen3Moe(const JsonReader& r, ModelConfig& c) {
  KV_ASSIGN_OR_RETURN(c.n_experts, r.Int(r.j, "num_experts"));
  KV_ASSIGN_OR_RETURN(c.n_experts_used, r.Int(r.j, "num_experts_per_tok"));
  KV_ASSIGN_OR_RETURN(c.expert_ff, r.Int(r.j, "moe_intermediate_size"));
  // transformers' default is false: weights are then the plain softmax probabilities of the top-k.
  KV_ASSIGN_OR_RETURN(c.norm_topk, r.Bool(r.j, "norm_topk_prob", false));
  KV_ASSIGN_OR_RETURN(int sparse_step, r.Int(r.j, "decoder_sparse_step", 1));
  if (sparse_step != 1) {
    return BadInput(r.path + ": decoder_sparse_step " + std::to_string(sparse_step) +
                    " mixes dense and expert layers; hint: kvaudit runs Qwen3-MoE models whose every layer is sparse "
                    "(decoder_sparse_step 1)");
  }
  if (r.Present(r.j, "mlp_only_layers")) {
    const Json& dense = r.j.at("mlp_only_layers");
    if (!dense.is_array()) return r.Invalid("mlp_only_layers", "a list");
    if (!dense.empty()) {
      return BadInput(r.path + ": mlp_only_layers " + JsonText(dense) +
                      " makes some layers dense; hint: kvaudit runs Qwen3-MoE models whose every layer is sparse");
    }
  }
  return Status::Ok();
}

// Mixtral (modeling_mixtral.py MixtralSparseMoeBlock): intermediate_size is each expert's width,
// and the top-k softmax weights are always renormalised.
Status ReadMixtral(const JsonReader& r, ModelConfig& c) {
  KV_ASSIGN_OR_RETURN(c.n_experts, r.Int(r.j, "num_local_experts"));
  KV_ASSIGN_OR_RETURN(c.n_experts_used, r.Int(r.j, "num_experts_per_tok"));
  c.expert_ff = c.d_ff;
  c.norm_topk = true;
  return Status::Ok();
}
}  // namespace

Expected<ModelConfig> ConfigFromHfJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot open; hint: a model directory must contain config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return BadInput(path + ": not a JSON object; hint: check the file is a valid config.json");
  const JsonReader r{j, path};

  ModelConfig c;
  KV_ASSIGN_OR_RETURN(c.arch, ArchFromHf(j, path));
  const bool gemma = c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3;
  const bool gpt_oss = c.arch == Arch::kGptOss;
  // Gemma's MLP activation is hidden_activation (transformers Gemma2MLP), gelu_pytorch_tanh.
  // gpt-oss's experts hard-code their clamped SwiGLU (GptOssExperts): hidden_act is not read.
  const char* act_key = gemma ? "hidden_activation" : "hidden_act";
  const std::string act = gemma ? "gelu_pytorch_tanh" : "silu";
  if (!gpt_oss && r.Present(j, act_key) && !(j[act_key].is_string() && j[act_key].get<std::string>() == act)) {
    return BadInput(path + ": unsupported " + act_key + " " + JsonText(j[act_key]) + "; hint: only " + act +
                    " MLPs are supported for " + ArchName(c.arch));
  }
  KV_ASSIGN_OR_RETURN(bool mlp_bias, r.Bool(j, "mlp_bias", false));
  if (mlp_bias) return BadInput(path + ": mlp_bias=true is not supported; hint: only bias-free MLPs are implemented");
  KV_ASSIGN_OR_RETURN(c.d_model, r.Int(j, "hidden_size"));
  KV_ASSIGN_OR_RETURN(c.n_layers, r.Int(j, "num_hidden_layers"));
  KV_ASSIGN_OR_RETURN(c.n_heads, r.Int(j, "num_attention_heads"));
  KV_ASSIGN_OR_RETURN(c.n_kv_heads, r.Int(j, "num_key_value_heads", c.n_heads));
  KV_ASSIGN_OR_RETURN(c.d_ff, r.Int(j, "intermediate_size"));
  KV_ASSIGN_OR_RETURN(c.vocab_size, r.Int(j, "vocab_size"));
  KV_ASSIGN_OR_RETURN(c.max_ctx, r.Int(j, "max_position_embeddings", 2048));
  KV_ASSIGN_OR_RETURN(double eps, r.Num(j, "rms_norm_eps", gpt_oss ? 1e-5 : 1e-6));  // GptOssConfig: 1e-5
  c.rms_eps = static_cast<float>(eps);
  if (c.n_heads <= 0 || c.d_model % c.n_heads != 0) {
    if (!r.Present(j, "head_dim")) {
      return BadInput(path + ": hidden_size " + std::to_string(c.d_model) +
                      " is not a multiple of num_attention_heads " + std::to_string(c.n_heads) +
                      "; hint: set head_dim explicitly");
    }
  }
  KV_ASSIGN_OR_RETURN(c.head_dim, r.Int(j, "head_dim", c.n_heads > 0 ? c.d_model / c.n_heads : 0));
  KV_ASSIGN_OR_RETURN(c.tied_embeddings, r.Bool(j, "tie_word_embeddings", false));
  KV_ASSIGN_OR_RETURN(bool attention_bias, r.Bool(j, "attention_bias", false));
  c.attn_qkv_bias = c.arch == Arch::kQwen2 || attention_bias;  // Qwen2Attention: q/k/v bias=True
  c.attn_o_bias = c.arch != Arch::kQwen2 && attention_bias;    // llama/qwen3: o_proj bias=attention_bias
  c.qk_norm = c.arch == Arch::kQwen3 || c.arch == Arch::kQwen3Moe;
  KV_ASSIGN_OR_RETURN(c.bos_id, r.TokenId("bos_token_id"));
  KV_ASSIGN_OR_RETURN(c.eos_id, r.TokenId("eos_token_id"));
  KV_RETURN_IF_ERROR(SetPartialRotary(r, r.j, "", c));
  KV_RETURN_IF_ERROR(ReadRope(r, c));
  if (gemma) {
    KV_RETURN_IF_ERROR(ReadHfGemma(r, c));
  } else if (gpt_oss) {
    KV_RETURN_IF_ERROR(ReadHfGptOss(r, c));
  } else {
    KV_RETURN_IF_ERROR(ReadSlidingWindow(r, c));
  }
  if (c.arch == Arch::kQwen3Moe) KV_RETURN_IF_ERROR(ReadQwen3Moe(r, c));
  if (c.arch == Arch::kMixtral) KV_RETURN_IF_ERROR(ReadMixtral(r, c));
  KV_RETURN_IF_ERROR(c.Validate(path));
  return c;
}

// ---------------------------------------------------------------- GGUF metadata
namespace {
// MoE keys that change what llama.cpp's 'llama' and 'qwen3moe' graphs compute (llama.cpp
// src/models/llama.cpp and src/models/qwen3moe.cpp @ 069be0ae: shared experts, a weight scale)
// or that other MoE graphs use (expert groups, dense leading layers, other gating functions):
// kvaudit implements none of them, so a file setting one to a non-neutral value is refused.
Status RefuseUnusedMoeKeys(const GgufFile& g, const std::string& arch) {
  const std::string hint = "kvaudit runs softmax-routed experts without shared experts or expert groups";
  for (const char* key : {"expert_shared_count", "expert_shared_feed_forward_length", "expert_group_count",
                          "leading_dense_block_count"}) {
    KV_ASSIGN_OR_RETURN(int v, GgufIntOr(g, arch + "." + key, 0));
    if (v > (std::string(key) == "expert_group_count" ? 1 : 0)) {
      return BadInput(g.label() + ": key '" + arch + "." + key + "' = " + std::to_string(v) +
                      " is not supported; hint: " + hint);
    }
  }
  KV_ASSIGN_OR_RETURN(int gating, GgufIntOr(g, arch + ".expert_gating_func", 1));  // 1 = softmax
  if (gating != 1) {
    return BadInput(g.label() + ": key '" + arch + ".expert_gating_func' = " + std::to_string(gating) +
                    " is not softmax (1); hint: " + hint);
  }
  if (g.Has(arch + ".expert_weights_scale")) {
    KV_ASSIGN_OR_RETURN(double scale, g.GetFloat(arch + ".expert_weights_scale"));
    if (scale != 0.0 && scale != 1.0) {
      return BadInput(g.label() + ": key '" + arch + ".expert_weights_scale' = " + std::to_string(scale) +
                      " is not supported; hint: " + hint);
    }
  }
  return Status::Ok();
}

// {arch}.expert_count / expert_used_count; the expert width is qwen3moe's expert_feed_forward_length
// (default n_ff / n_expert_used, as llama.cpp's qwen3moe loader) or llama's feed_forward_length.
// Both llama.cpp graphs renormalise the top-k weights unconditionally (build_moe_ffn's norm_w =
// true), so a file saying expert_weights_norm = false contradicts what llama.cpp computes: refused.
Status ReadGgufMoe(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  KV_ASSIGN_OR_RETURN(c.n_experts, GgufIntOr(g, arch + ".expert_count", 0));
  if (c.n_experts == 0) return Status::Ok();  // dense; for qwen3moe Validate names the missing count
  if (!g.Has(arch + ".expert_used_count")) {
    return BadInput(g.label() + ": missing key '" + arch + ".expert_used_count'; hint: a mixture-of-experts GGUF " +
                    "needs expert_count and expert_used_count");
  }
  KV_ASSIGN_OR_RETURN(c.n_experts_used, GgufIntOr(g, arch + ".expert_used_count", 0));
  const int per_used = c.n_experts_used > 0 ? c.d_ff / c.n_experts_used : 0;
  c.expert_ff = c.d_ff;
  if (c.arch == Arch::kQwen3Moe) {
    KV_ASSIGN_OR_RETURN(c.expert_ff, GgufIntOr(g, arch + ".expert_feed_forward_length", per_used));
  }
  c.norm_topk = true;
  if (g.Has(arch + ".expert_weights_norm")) {
    KV_ASSIGN_OR_RETURN(bool norm, g.GetBool(arch + ".expert_weights_norm"));
    if (!norm) {
      return BadInput(g.label() + ": key '" + arch + ".expert_weights_norm' is false, but llama.cpp's " + arch +
                      " graph renormalises the top-k weights; hint: kvaudit follows llama.cpp and refuses the file");
    }
  }
  return RefuseUnusedMoeKeys(g, arch);
}
}  // namespace

Expected<ModelConfig> ConfigFromGguf(const GgufFile& g) {
  const std::string& file = g.label();
  auto missing = [&](const std::string& key, const std::string& hint) {
    return BadInput(file + ": missing key '" + key + "'; hint: " + hint);
  };
  if (!g.Has("general.architecture"))
    return missing("general.architecture", "is this a model GGUF (not vocabulary-only)?");
  KV_ASSIGN_OR_RETURN(std::string arch, g.GetString("general.architecture"));
  ModelConfig c;
  if (arch == "llama")
    c.arch = Arch::kLlama;
  else if (arch == "qwen2")
    c.arch = Arch::kQwen2;
  else if (arch == "qwen3")
    c.arch = Arch::kQwen3;
  else if (arch == "qwen3moe")
    c.arch = Arch::kQwen3Moe;
  else if (arch == "phi3")
    c.arch = Arch::kPhi3;
  else if (arch == "gemma2")
    c.arch = Arch::kGemma2;
  else if (arch == "gemma3")
    c.arch = Arch::kGemma3;
  else if (arch == "gpt-oss")
    c.arch = Arch::kGptOss;
  else
    return BadInput(file + ": unsupported architecture '" + arch +
                    "'; hint: kvaudit runs llama, mistral and mixtral (as llama), qwen2, qwen3, qwen3moe, phi3, "
                    "gemma2, gemma3 and gpt-oss GGUFs");
  const bool own_window = c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3 || c.arch == Arch::kGptOss;

  const std::string hint = "re-convert the model with llama.cpp's convert_hf_to_gguf.py";
  auto get_int = [&](const std::string& key, int& out, std::optional<int> def) -> Status {
    const std::string k = arch + "." + key;
    if (!g.Has(k)) {
      if (def) {
        out = *def;
        return Status::Ok();
      }
      return missing(k, hint);
    }
    KV_ASSIGN_OR_RETURN(int64_t v, g.GetInt(k));
    if (v < 0 || v > INT32_MAX) return BadInput(file + ": key '" + k + "' out of range; hint: " + hint);
    out = static_cast<int>(v);
    return Status::Ok();
  };
  auto get_float = [&](const std::string& key, double& out, std::optional<double> def) -> Status {
    const std::string k = arch + "." + key;
    if (!g.Has(k)) {
      if (def) {
        out = *def;
        return Status::Ok();
      }
      return missing(k, hint);
    }
    KV_ASSIGN_OR_RETURN(out, g.GetFloat(k));
    return Status::Ok();
  };
  KV_RETURN_IF_ERROR(get_int("block_count", c.n_layers, std::nullopt));
  KV_RETURN_IF_ERROR(get_int("embedding_length", c.d_model, std::nullopt));
  KV_RETURN_IF_ERROR(get_int("attention.head_count", c.n_heads, std::nullopt));
  KV_RETURN_IF_ERROR(get_int("attention.head_count_kv", c.n_kv_heads, c.n_heads));
  KV_RETURN_IF_ERROR(get_int("feed_forward_length", c.d_ff, std::nullopt));
  KV_RETURN_IF_ERROR(get_int("context_length", c.max_ctx, std::nullopt));
  KV_RETURN_IF_ERROR(get_int("attention.key_length", c.head_dim, c.n_heads > 0 ? c.d_model / c.n_heads : 0));
  if (!own_window) KV_RETURN_IF_ERROR(get_int("attention.sliding_window", c.sliding_window, 0));
  if (c.arch == Arch::kPhi3) {
    // llama.cpp disables Phi-3's window (src/models/phi3.cpp load_arch_hparams @de3ff815: "Phi SWA
    // is currently disabled", PR #13676); kvaudit follows the engine that runs the GGUF.
    c.unapplied_sliding_window = c.sliding_window;
    c.sliding_window = 0;
  }
  int rope_dims = 0;
  KV_RETURN_IF_ERROR(get_int("rope.dimension_count", rope_dims, c.head_dim));
  // Part of each head (Phi-4-mini: 96 of 128): llama.cpp's NEOX rope with n_rot < head_dim rotates
  // the first n_rot dims (ggml-cpu ops.cpp rope); kvaudit runs it for phi3, whose GGUF is not
  // permuted. Llama-style GGUFs store q/k permuted for interleaved pairs over the whole head.
  if (rope_dims != c.head_dim) {
    if (c.arch != Arch::kPhi3 || rope_dims <= 0 || rope_dims > c.head_dim || rope_dims % 2 != 0) {
      return BadInput(file + ": " + arch + ".rope.dimension_count " + std::to_string(rope_dims) +
                      " rotates part of each head of " + std::to_string(c.head_dim) +
                      " dimensions; hint: kvaudit rotates part of a head for phi3 only, an even number of dimensions");
    }
    c.rope.dims = rope_dims;
  }
  double eps = 0;
  KV_RETURN_IF_ERROR(get_float("attention.layer_norm_rms_epsilon", eps, std::nullopt));
  c.rms_eps = static_cast<float>(eps);
  KV_RETURN_IF_ERROR(get_float("rope.freq_base", c.rope.theta, 10000.0));

  // Vocabulary: {arch}.vocab_size, else the embedding's row count (TensorView shape is outermost first).
  const TensorView* embd = g.FindTensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) return BadInput(file + ": missing tensor 'token_embd.weight'; hint: " + hint);
  KV_RETURN_IF_ERROR(get_int("vocab_size", c.vocab_size, static_cast<int>(embd->shape[0])));

  const std::string scaling_key = arch + ".rope.scaling.type";
  if (g.Has(scaling_key)) {
    KV_ASSIGN_OR_RETURN(std::string type, g.GetString(scaling_key));
    if (type == "linear") {
      c.rope.type = RopeType::kLinear;
      KV_RETURN_IF_ERROR(get_float("rope.scaling.factor", c.rope.factor, std::nullopt));
    } else if (type == "yarn") {
      KV_RETURN_IF_ERROR(ReadGgufYarn(g, arch, c));
    } else if (type != "none") {
      return BadInput(file + ": unsupported rope scaling '" + type +
                      "'; hint: kvaudit supports none, linear, yarn and llama3 RoPE");
    }
  }
  // llama3 RoPE: convert_hf_to_gguf.py (LlamaModel.generate_extra_tensors) stores the divisors
  // 1/(llama3 inv_freq / default inv_freq) as rope_freqs.weight; llama.cpp divides theta by them.
  if (const TensorView* rf = g.FindTensor("rope_freqs.weight")) {
    if (rf->numel() != c.head_dim / 2) {
      return BadInput(file + ": tensor 'rope_freqs.weight' has " + std::to_string(rf->numel()) +
                      " elements, expected head_dim/2 = " + std::to_string(c.head_dim / 2) + "; hint: " + hint);
    }
    c.rope.freq_divisors.resize(rf->numel());
    KV_RETURN_IF_ERROR(DequantizeToF32(*rf, c.rope.freq_divisors.data()));
    c.rope.type = RopeType::kLlama3;
  }
  KV_RETURN_IF_ERROR(ReadGgufLongRope(g, arch, c));
  // llama_context multiplies cos and sin by {arch}.rope.scaling.attn_factor whatever the scaling
  // (llama-context.cpp: yarn_attn_factor *= hparams.rope_attn_factor); YaRN refuses the key.
  if (c.rope.type != RopeType::kYarn) {
    KV_RETURN_IF_ERROR(get_float("rope.scaling.attn_factor", c.rope.attn_factor, 1.0));
    if (!(c.rope.attn_factor > 0)) {
      return BadInput(file + ": key '" + arch +
                      ".rope.scaling.attn_factor' is not positive; hint: the file is corrupt");
    }
  }
  c.tied_embeddings = g.FindTensor("output.weight") == nullptr;
  if (g.FindTensor("blk.0.attn_qkv.bias")) {
    return BadInput(file + ": tensor 'blk.0.attn_qkv.bias': a fused q|k|v bias is not supported; hint: " + hint);
  }
  c.attn_qkv_bias = g.FindTensor("blk.0.attn_q.bias") != nullptr;
  c.attn_o_bias = g.FindTensor("blk.0.attn_output.bias") != nullptr;
  c.qk_norm = g.FindTensor("blk.0.attn_q_norm.weight") != nullptr;
  KV_RETURN_IF_ERROR(ReadGgufMoe(g, arch, c));
  KV_RETURN_IF_ERROR(ReadGgufArchBlocks(g, arch, c));
  if (g.Has("tokenizer.ggml.bos_token_id")) {
    KV_ASSIGN_OR_RETURN(int64_t v, g.GetInt("tokenizer.ggml.bos_token_id"));
    c.bos_id = static_cast<int>(v);
  }
  if (g.Has("tokenizer.ggml.eos_token_id")) {
    KV_ASSIGN_OR_RETURN(int64_t v, g.GetInt("tokenizer.ggml.eos_token_id"));
    c.eos_id = static_cast<int>(v);
  }
  KV_RETURN_IF_ERROR(c.Validate(file));
  return c;
}

}  // namespace kvaudit
