// LongRoPE (Phi-3-mini-128k, Phi-3-medium-128k, Phi-3.5-mini, Phi-4-mini): two sets of per-frequency
// divisors, the original context that decides between them, and a cos/sin scale, read from a GGUF
// (llama.cpp's converter conversion/phi.py Phi3MiniModel @de3ff815: rope_factors_long/short.weight,
// {arch}.rope.scaling.original_context_length, {arch}.rope.scaling.attn_factor) or a config.json
// (transformers modeling_rope_utils.py _compute_longrope_parameters). Which set runs is the run's
// business (ops/rope.h RopeParams::ForContext).
#include <cmath>
#include <cstdio>

#include "base/json_text.h"
#include "io/dequantize.h"
#include "io/gguf.h"
#include "model/config_layers.h"

namespace kvaudit {

namespace {
Status CheckFactors(const std::vector<float>& f, const std::string& what, const std::string& source) {
  for (float x : f) {
    if (!(std::isfinite(x) && x > 0)) {
      return BadInput(source + ": " + what + " holds " + std::to_string(x) +
                      "; hint: LongRoPE factors divide frequencies, so each must be a positive finite number");
    }
  }
  return Status::Ok();
}

// [rotary dims/2] (head_dim/2 unless part of each head rotates).
Expected<std::vector<float>> GgufFactors(const GgufFile& g, const char* name, int rot_dims) {
  const TensorView* t = g.FindTensor(name);
  if (!t) {
    return BadInput(g.label() + ": tensor '" + name +
                    "' is missing beside its LongRoPE twin; hint: llama.cpp's converter writes both "
                    "rope_factors_long.weight and rope_factors_short.weight");
  }
  if (t->numel() != rot_dims / 2) {
    return BadInput(g.label() + ": tensor '" + name + "' has " + std::to_string(t->numel()) +
                    " elements, expected rotary dims/2 = " + std::to_string(rot_dims / 2) +
                    "; hint: the file is corrupt");
  }
  std::vector<float> f(static_cast<size_t>(t->numel()));  // [rot_dims/2]
  KV_RETURN_IF_ERROR(DequantizeToF32(*t, f.data()));
  KV_RETURN_IF_ERROR(CheckFactors(f, std::string("tensor '") + name + "'", g.label()));
  return f;
}

Expected<std::vector<float>> JsonFactors(const JsonReader& r, const Json& p, const std::string& where, const char* key,
                                         int rot_dims) {
  const std::string name = where + "." + key;
  if (!r.Present(p, key)) return r.Invalid(name, "a list of rotary dims/2 numbers");
  const Json& v = p.at(key);
  if (!v.is_array() || static_cast<int>(v.size()) != rot_dims / 2) {
    return r.Invalid(name, "a list of rotary dims/2 = " + std::to_string(rot_dims / 2) + " numbers");
  }
  std::vector<float> f;  // [rot_dims/2], as torch.tensor(..., dtype=float32) rounds them
  for (const Json& x : v) {
    if (!x.is_number()) return r.Invalid(name, "a list of numbers");
    f.push_back(static_cast<float>(x.get<double>()));
  }
  KV_RETURN_IF_ERROR(CheckFactors(f, name, r.path));
  return f;
}
}  // namespace

Status ReadGgufLongRope(const GgufFile& g, const std::string& arch, ModelConfig& c) {
  const bool has_long = g.FindTensor("rope_factors_long.weight"), has_short = g.FindTensor("rope_factors_short.weight");
  if (!has_long && !has_short) return Status::Ok();
  // llama.cpp creates these tensors for phi3 only among the architectures kvaudit runs (its
  // loader refuses a file with tensors it did not create).
  if (c.arch != Arch::kPhi3) {
    return BadInput(g.label() + ": LongRoPE factor tensors in a '" + arch +
                    "' file; hint: llama.cpp reads them for phi3 only, so this file does not load there either");
  }
  if (c.rope.type != RopeType::kDefault || !c.rope.freq_divisors.empty()) {
    return BadInput(g.label() + ": LongRoPE factors beside rope scaling '" + RopeTypeName(c.rope.type) +
                    "' or rope_freqs.weight; hint: a Phi-3 GGUF from llama.cpp's converter has only the factors");
  }
  KV_ASSIGN_OR_RETURN(c.rope.long_factors, GgufFactors(g, "rope_factors_long.weight", c.rope.RotatedDims(c.head_dim)));
  KV_ASSIGN_OR_RETURN(c.rope.short_factors,
                      GgufFactors(g, "rope_factors_short.weight", c.rope.RotatedDims(c.head_dim)));
  // llama-model.cpp load_hparams: n_ctx_orig_yarn defaults to the training context.
  KV_ASSIGN_OR_RETURN(c.rope.original_max_position_embeddings,
                      GgufIntOr(g, arch + ".rope.scaling.original_context_length", c.max_ctx));
  if (c.rope.original_max_position_embeddings <= 0) {
    return BadInput(g.label() + ": key '" + arch +
                    ".rope.scaling.original_context_length' is 0; hint: the file is corrupt");
  }
  c.rope.type = RopeType::kLongRope;
  return Status::Ok();
}

// transformers _compute_longrope_parameters: long_factor / short_factor; the original context from
// the top level (Phi-3's config.json) or the rope object, the scale then max_position_embeddings /
// original, else `factor`; attention_factor, else sqrt(1 + ln(scale) / ln(original)) above scale 1.
Status ReadHfLongRope(const JsonReader& r, const Json& p, const std::string& where, ModelConfig& c) {
  for (const char* key : {"short_mscale", "long_mscale"}) {
    if (r.Present(p, key)) {
      return BadInput(r.path + ": " + where + "." + key +
                      " is not supported; hint: transformers ignores it and vLLM applies it, so the model's "
                      "arithmetic depends on the engine; remove it to run transformers' LongRoPE");
    }
  }
  c.rope.type = RopeType::kLongRope;
  KV_ASSIGN_OR_RETURN(c.rope.long_factors, JsonFactors(r, p, where, "long_factor", c.rope.RotatedDims(c.head_dim)));
  KV_ASSIGN_OR_RETURN(c.rope.short_factors, JsonFactors(r, p, where, "short_factor", c.rope.RotatedDims(c.head_dim)));
  const bool top = r.Present(r.j, "original_max_position_embeddings");
  KV_ASSIGN_OR_RETURN(int original, top ? r.Int(r.j, "original_max_position_embeddings")
                                        : r.Int(p, "original_max_position_embeddings", 0));
  double scale = 0;
  if (original > 0) {
    scale = static_cast<double>(c.max_ctx) / original;
  } else {
    original = c.max_ctx;
    KV_ASSIGN_OR_RETURN(scale, r.Num(p, "factor"));
  }
  c.rope.original_max_position_embeddings = original;
  c.rope.attn_factor = scale <= 1.0 ? 1.0 : std::sqrt(1 + std::log(scale) / std::log(static_cast<double>(original)));
  KV_ASSIGN_OR_RETURN(c.rope.attn_factor, r.Num(p, "attention_factor", c.rope.attn_factor));
  if (!(c.rope.attn_factor > 0)) return r.Invalid(where + ".attention_factor", "a positive number");
  return Status::Ok();
}

std::string DescribeLongRope(const ModelConfig& c, int context) {
  if (!c.rope.is_longrope()) return "";
  const int original = c.rope.original_max_position_embeddings;
  const bool use_long = c.rope.UsesLongFactors(context);
  char scale[32];
  std::snprintf(scale, sizeof(scale), "%.6g", c.rope.attn_factor);
  return std::string("LongRoPE: the ") + (use_long ? "long" : "short") + " factors at a context of " +
         std::to_string(context) + " (" + (use_long ? "above" : "at most") + " the original " +
         std::to_string(original) + "), for every position, as llama.cpp with -c " + std::to_string(context) +
         " and vLLM with --max-model-len " + std::to_string(context) + " run them; cos/sin scaled by " + scale;
}

}  // namespace kvaudit
