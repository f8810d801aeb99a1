// Hugging Face transformers: DynamicCache in the model dtype, or QuantizedCache (backend quanto or
// hqq) with one nbits for K and V, q_group_size and a cycling full-precision residual. Sources
// (docs/deployment.md): huggingface/transformers:docs/source/en/kv_cache.md @04d5adf3
// (cache_implementation="quantized", cache_config), src/transformers/cache_utils.py @004999d9
// (QuantizedCache, QuantizedLayer.update, QuantoQuantizedLayer: nbits 2 or 4, axis 0 or -1,
// MaxOptimizer; HQQQuantizedLayer: nbits 1, 2, 3, 4, 8).
#include <algorithm>

#include "decide/targets/targets.h"

namespace kvaudit {
namespace {

const std::vector<KvFormat>& Have() {  // what transformers runs as kvaudit measures it
  static const std::vector<KvFormat> have = {KvFormat::kF16, KvFormat::kBF16, KvFormat::kF32, KvFormat::kInt4};
  return have;
}

std::string FormatReason(const LayerKv& l, const HeadConfig& p) {
  if (l.k != l.v) return "transformers' QuantizedCache quantizes K and V with one nbits (one format for both)";
  if (IsFullPrecision(l.k)) return "";
  const std::string name(KvFormatName(l.k));
  if (IsKivi(l.k)) {
    return name +
           ": transformers' KIVI-like cache (quanto, axis_key=-1) re-quantizes the whole cache from one cycling "
           "residual; kvaudit's KIVI keeps complete key groups and a sliding value window";
  }
  if (l.k == KvFormat::kInt8) {
    return "int8: transformers has 8 bits only with backend hqq, which fits zero-points by half-quadratic "
           "optimisation, "
           "not kvaudit's min/max rounding";
  }
  if (l.k != KvFormat::kInt4) {
    return name +
           " is not a transformers cache format (DynamicCache in the model dtype; QuantizedCache int4 with quanto)";
  }
  if (p.Recent() == 0) {
    return "transformers always keeps the newest token in full precision (residual_length >= 1); recent=1 is that";
  }
  if (p.Recent() > 1) {
    return "transformers' residual cycles between 1 and residual_length full-precision tokens; recent=" +
           std::to_string(p.Recent()) + " keeps exactly " + std::to_string(p.Recent());
  }
  return "";
}

std::vector<std::string> Analyze(const TargetView& v, const ModelConfig&) {
  std::vector<std::string> why;
  const HeadConfig& p = v.heads.front();
  int sink = 0, outliers = 0;
  bool pre_rope = false, rot = false;
  for (const HeadConfig& q : v.heads) {
    sink = std::max(sink, q.sink), outliers = std::max(outliers, q.outliers);
    pre_rope = pre_rope || q.pre_rope, rot = rot || q.rot == RotationMode::kOn;
  }
  if (sink || outliers || pre_rope) {
    why.push_back(std::string(sink ? "sink=" + std::to_string(sink) + " " : "") +
                  (outliers ? "outliers=" + std::to_string(outliers) + " " : "") + (pre_rope ? "prerope=1 " : "") +
                  ": sinks, outlier channels and pre-RoPE keys are kvaudit protections transformers does not have");
  }
  if (v.attention == AttentionMode::kLlamaCpp)
    why.push_back("engine=llama.cpp measures llama.cpp's attention arithmetic");
  if (rot) why.push_back("transformers' QuantizedCache has no rotation (rot=1)");
  if (v.heads_differ || !v.HeadsUniform())
    why.push_back("transformers' QuantizedCache has one configuration for all layers and heads");
  if (std::string f = FormatReason(v.layers.front(), p); !f.empty()) why.push_back(f);
  return why;
}

std::vector<CacheConfig> Candidates(const TargetView& v, const ModelConfig&) {
  const HeadConfig& p = v.heads.front();
  const int group = IsIntGroup(p.k) || IsIntGroup(p.v) ? p.IntGroup() : 64;
  CandidateKeys extra;
  if (group != 64) extra.mods.group = group;
  extra.mods.recent = 1;
  return StandInSpecs(v, Have(), /*same_kv=*/true, /*per_layer=*/false, extra);
}

std::string TorchDtype(KvFormat f) {
  return f == KvFormat::kBF16 ? "torch.bfloat16" : f == KvFormat::kF32 ? "torch.float32" : "torch.float16";
}

void Render(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  const LayerKv l = v.layers.front();
  out.applies_to = "transformers main (cache_utils.py @004999d9, docs kv_cache.md @04d5adf3)";
  if (IsFullPrecision(l.k)) {
    out.flags = {"torch_dtype=" + TorchDtype(l.k)};
    out.command_example = "AutoModelForCausalLM.from_pretrained(\"<model>\", torch_dtype=" + TorchDtype(l.k) +
                          ").generate(**inputs)  # DynamicCache, the default";
    out.notes.push_back("the cache keeps the model dtype; torch_dtype sets the weights too");
    out.memory = HfCacheMemory({0, 64, 0, ElementBytes(l.k)}, c, ctx);
    return;
  }
  const int group = v.heads.front().IntGroup();
  const std::string config =
      "{\"backend\": \"quanto\", \"nbits\": 4, \"axis_key\": 0, \"axis_value\": 0, \"q_group_size\": " +
      std::to_string(group) + ", \"residual_length\": 1}";
  out.flags = {"cache_implementation=\"quantized\"", "cache_config=" + config};
  out.command_example = "model.generate(**inputs, cache_implementation=\"quantized\", cache_config=" + config + ")";
  out.notes.push_back(
      "or past_key_values=QuantizedCache(backend=\"quanto\", config=model.config, nbits=4, q_group_size=" +
      std::to_string(group) + ", residual_length=1); QuantoQuantizedCache is deprecated (removal in v4.59)");
  out.notes.push_back(
      "quanto axis 0 groups q_group_size contiguous elements of each token's head (min/max scale and "
      "shift, MaxOptimizer), kept in the model dtype where kvaudit keeps f16; needs optimum-quanto >= 0.2.5");
  out.notes.push_back(
      "the first call attends the prompt unquantized; kvaudit reads the prompt quantized too (stricter)");
  out.notes.push_back("each flush re-quantizes the whole cache from its dequantized values");
  // residual_length=1 flushes on every update, so no residual is held between steps.
  out.memory = HfCacheMemory({4, group, 0, 2}, c, ctx);
}

}  // namespace

const TargetRules& TransformersEngine() {
  static const TargetRules impl{DeployTarget::kTransformers, Analyze, Candidates, Render};
  return impl;
}

}  // namespace kvaudit
