// The paged-cache servers: vLLM, SGLang and TensorRT-LLM. Each stores K and V of a layer in one
// dtype: the model's (auto) or an fp8 type with per-tensor (vLLM also per-KV-head) scales; vLLM
// alone keeps chosen layers unquantized (--kv-cache-dtype-skip-layers). Sources (docs/deployment.md):
// vllm-project/vllm:docs/features/quantization/quantized_kvcache.md @0609ba15, vllm/config/cache.py @002f10e0,
// PRs #33695, #37201, #49389; sgl-project/sglang:docs/advanced_features/server_arguments.md @004813e1 and
// quantized_kv_cache.md @03cd2ec4; NVIDIA/TensorRT-LLM:docs/source/features/kvcache.md @0076e939 and
// the KvCacheConfig reference (1.3.0rc27).
#include <algorithm>
#include <optional>

#include "decide/targets/targets.h"

namespace kvaudit {
namespace {

struct Caps {
  DeployTarget target;
  std::string name;
  std::string dtype_knob;      // where the cache dtype is set
  std::vector<KvFormat> have;  // full-precision types (as the model dtype) and fp8 types
  bool skip_layers;            // unquantized layers among quantized ones
  bool unit_scale, calib_layer, calib_head;
  std::string fp8_blocker;  // when set, no fp8 cache is expressible, for this reason
};

const Caps& VllmCaps() {
  static const Caps c{DeployTarget::kVllm,
                      "vLLM",
                      "--kv-cache-dtype",
                      {KvFormat::kF16, KvFormat::kBF16, KvFormat::kF32, KvFormat::kFp8E4M3, KvFormat::kFp8E5M2},
                      true,
                      true,
                      true,
                      true,
                      ""};
  return c;
}

const Caps& SglangCaps() {
  // quantized_kv_cache.md: "Currently, only per-tensor (scalar) scaling factors are supported";
  // per-layer dtypes (PR #17530) were not merged. --page-size defaults to 1.
  static const Caps c{DeployTarget::kSglang,
                      "SGLang",
                      "--kv-cache-dtype",
                      {KvFormat::kF16, KvFormat::kBF16, KvFormat::kF32, KvFormat::kFp8E4M3, KvFormat::kFp8E5M2},
                      false,
                      true,
                      true,
                      false,
                      ""};
  return c;
}

const Caps& TrtCaps() {
  static const Caps c{DeployTarget::kTensorRtLlm,
                      "TensorRT-LLM",
                      "KvCacheConfig dtype",
                      {KvFormat::kF16, KvFormat::kBF16},
                      false,
                      false,
                      false,
                      false,
                      "the documented TensorRT-LLM routes to an fp8 cache (ModelOpt quantize.py --qformat fp8 "
                      "--kv_cache_dtype fp8, an FP8 checkpoint with --kv_cache_dtype fp8) quantize the weights too"};
  return c;
}

// What the layers ask of a paged-cache engine: one fp8 type for the quantized layers, one
// full-precision type (the model dtype) for the others.
struct Plan {
  std::optional<KvFormat> fp8, full;
  std::vector<int> full_layers;
  HeadConfig fp8_head;
};

std::string DtypeList(const Caps& caps) {
  std::string s = "auto";
  for (KvFormat f : caps.have) {
    if (IsFp8(f)) s += ", " + std::string(KvFormatName(f));
  }
  return s;
}

// Layer by layer: K and V share a dtype; one fp8 type and one full type overall.
std::string LayerReason(const TargetView& v, const Caps& caps, Plan& plan) {
  for (int i = 0; i < v.n_layers(); ++i) {
    const LayerKv l = v.layers[i];
    if (l.k != l.v) return caps.name + " stores K and V of a layer in one dtype (" + caps.dtype_knob + ")";
    if (IsFp8(l.k) && !caps.fp8_blocker.empty()) return caps.fp8_blocker;
    if (std::find(caps.have.begin(), caps.have.end(), l.k) == caps.have.end()) {
      return std::string(KvFormatName(l.k)) + " is not a " + caps.name + " KV cache dtype (" + DtypeList(caps) +
             (IsFp8(l.k) ? "" : "; auto = the model dtype") + ")";
    }
    std::optional<KvFormat>& slot = IsFp8(l.k) ? plan.fp8 : plan.full;
    if (slot && *slot != l.k) {
      return IsFp8(l.k) ? caps.name + " has one " + caps.dtype_knob + " for all quantized layers"
                        : caps.name + " keeps unquantized layers in the model dtype, one type";
    }
    slot = l.k;
    if (IsFp8(l.k))
      plan.fp8_head = v.heads[i];
    else
      plan.full_layers.push_back(i);
  }
  if (plan.fp8 && plan.full && !caps.skip_layers)
    return caps.name + " quantizes the KV cache of every layer or of none";
  return "";
}

std::string ScaleReason(const TargetView& v, const Caps& caps, const Plan& plan) {
  if (!plan.fp8) return "";
  for (int i = 0; i < v.n_layers(); ++i) {
    const HeadConfig& p = v.heads[i];
    if (IsFp8(p.k) && (p.scale != plan.fp8_head.scale || p.scale_by != plan.fp8_head.scale_by)) {
      return caps.name + " has one scale setting for all quantized layers";
    }
  }
  const HeadConfig& p = plan.fp8_head;
  if (p.scale == Fp8ScaleMode::kDynamic)
    return "scale=dynamic (an f32 scale per 32 elements) has no " + caps.name + " equivalent";
  if (p.scale == Fp8ScaleMode::kUnit)
    return caps.unit_scale ? "" : caps.name + " takes its fp8 scales from the checkpoint";
  if (*plan.fp8 == KvFormat::kFp8E5M2)
    return "no source was found that " + caps.name + " applies calibrated scales to fp8_e5m2";
  if (p.scale_by == Fp8ScaleBy::kHead && !caps.calib_head)
    return caps.name + " has per-tensor fp8 scales only, not per KV head";
  if (p.scale_by == Fp8ScaleBy::kLayer && !caps.calib_layer)
    return caps.name + " has no calibrated per-tensor fp8 scales";
  return "";
}

std::vector<std::string> Reasons(const TargetView& v, const Caps& caps, Plan* out_plan) {
  std::vector<std::string> why;
  if (std::string p = ProtectionReason(v); !p.empty()) why.push_back(p);
  if (v.attention == AttentionMode::kLlamaCpp)
    why.push_back("engine=llama.cpp measures llama.cpp's attention arithmetic, not " + caps.name + "'s");
  if (v.heads_differ) why.push_back(caps.name + " has one KV cache dtype for all KV heads");
  for (const HeadConfig& p : v.heads) {
    if (p.rot == RotationMode::kOn) {
      why.push_back("no rotation of the KV cache was found in " + caps.name + "'s documentation (rot=1)");
      break;
    }
  }
  Plan plan;
  if (std::string r = LayerReason(v, caps, plan); !r.empty())
    why.push_back(r);
  else if (std::string s = ScaleReason(v, caps, plan); !s.empty())
    why.push_back(s);
  if (out_plan) *out_plan = plan;
  return why;
}

std::vector<CacheConfig> Candidates(const TargetView& v, const Caps& caps) {
  CandidateKeys extra;
  for (const HeadConfig& p : v.heads) {
    if (!IsFp8(p.k) && !IsFp8(p.v)) continue;
    // The nearest scale the engine has: calibrated per-layer scales for dynamic or per-head ones.
    if (p.scale == Fp8ScaleMode::kCalib && p.scale_by == Fp8ScaleBy::kHead && caps.calib_head) {
      extra.mods.scale = Fp8ScaleMode::kCalib, extra.mods.scale_by = Fp8ScaleBy::kHead;
    } else if (p.scale != Fp8ScaleMode::kUnit || !caps.unit_scale) {
      extra.mods.scale = Fp8ScaleMode::kCalib;
    }
    break;
  }
  return StandInSpecs(v, caps.have, /*same_kv=*/true, caps.skip_layers, extra);
}

uint64_t ScaleBytes(const Plan& plan, const ModelConfig& c, int n_fp8_layers) {
  if (!plan.fp8) return 0;
  const uint64_t per_layer = plan.fp8_head.scale == Fp8ScaleMode::kCalib && plan.fp8_head.scale_by == Fp8ScaleBy::kHead
                                 ? static_cast<uint64_t>(c.n_kv_heads)
                                 : 1;
  return 2 * per_layer * 4 * n_fp8_layers;  // f32 k_scale and v_scale per quantized layer
}

std::string DtypeFlagValue(KvFormat f) {
  return f == KvFormat::kBF16 ? "bfloat16" : f == KvFormat::kF32 ? "float32" : "float16";
}

std::string Joined(const std::vector<int>& v) {
  std::string s;
  for (int i : v) s += (s.empty() ? "" : " ") + std::to_string(i);
  return s;
}

void ScaleNotes(const Plan& plan, const Caps& caps, std::vector<std::string>& notes) {
  if (!plan.fp8) return;
  const HeadConfig& p = plan.fp8_head;
  if (p.scale == Fp8ScaleMode::kUnit) {
    notes.push_back("fp8 scales are 1.0 when the checkpoint carries none (the spec's scale=unit); " + caps.name +
                    " loads k/v scales a checkpoint does carry");
  } else if (caps.target == DeployTarget::kVllm) {
    notes.push_back(
        std::string("scale=calib needs a checkpoint with calibrated scales (llm-compressor kv_cache_scheme, "
                    "strategy \"") +
        (p.scale_by == Fp8ScaleBy::kHead ? "attn_head\"; per-head scales need the "
                                           "Flash Attention backend"
                                         : "tensor\"") +
        "); their values are its calibration's, not kvaudit's");
  } else {
    notes.push_back(
        "scale=calib: per-layer k/v scales from the checkpoint or --quantization-param-path (JSON: TP rank -> "
        "layer -> scale); their values are that calibration's, not kvaudit's");
  }
}

void VllmRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  Plan plan;
  Reasons(v, VllmCaps(), &plan);
  out.flags = {"--kv-cache-dtype " + (plan.fp8 ? std::string(KvFormatName(*plan.fp8)) : std::string("auto"))};
  if (plan.fp8 && !plan.full_layers.empty())
    out.flags.push_back("--kv-cache-dtype-skip-layers " + Joined(plan.full_layers));
  if (plan.full) out.flags.push_back("--dtype " + DtypeFlagValue(*plan.full));
  out.flags.push_back("--max-model-len " + std::to_string(ctx));
  out.command_example = "vllm serve <model>";
  for (const std::string& f : out.flags) out.command_example += " " + f;
  ScaleNotes(plan, VllmCaps(), out.notes);
  if (plan.fp8) {
    out.notes.push_back(
        "--calculate-kv-scales (scales from one warm-up batch) was deprecated in PR #37201 and removed in "
        "PR #49389 (2026-07-22); it is not used");
    out.notes.push_back(
        "with the Flash Attention 3 backend vLLM quantizes the queries to fp8 too; kvaudit keeps them in f32");
  }
  if (plan.fp8 && plan.full)
    out.notes.push_back(
        "skipped layers keep the model dtype (--dtype); vLLM may pad their pages to the quantized layers' page size");
  if (plan.full)
    out.notes.push_back(
        "--dtype sets the weights and activations too: the spec's full-precision type is the model dtype");
  out.applies_to = "vLLM main (quantized_kvcache.md @0609ba15, config/cache.py @002f10e0); skip layers since PR #33695";
  out.memory = PagedCacheMemory(v.layers, c, ctx, VllmCells(),
                                ScaleBytes(plan, c, v.n_layers() - static_cast<int>(plan.full_layers.size())));
}

void SglangRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  Plan plan;
  Reasons(v, SglangCaps(), &plan);
  std::string dtype = plan.fp8 ? std::string(KvFormatName(*plan.fp8)) : plan.full == KvFormat::kBF16 ? "bf16" : "auto";
  out.flags = {"--kv-cache-dtype " + dtype};
  if (plan.full && *plan.full != KvFormat::kBF16) out.flags.push_back("--dtype " + DtypeFlagValue(*plan.full));
  if (plan.fp8 && plan.fp8_head.scale == Fp8ScaleMode::kCalib)
    out.flags.push_back("--quantization-param-path kv_cache_scales.json");
  out.flags.push_back("--context-length " + std::to_string(ctx));
  out.command_example = "python3 -m sglang.launch_server --model-path <model>";
  for (const std::string& f : out.flags) out.command_example += " " + f;
  ScaleNotes(plan, SglangCaps(), out.notes);
  if (plan.fp8)
    out.notes.push_back("check that the attention backend supports a quantized KV cache (quantized_kv_cache.md)");
  out.applies_to = "SGLang main (server_arguments.md @004813e1, quantized_kv_cache.md @03cd2ec4)";
  out.memory = PagedCacheMemory(v.layers, c, ctx, SglangCells(), ScaleBytes(plan, c, plan.fp8 ? v.n_layers() : 0));
}

void TrtRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  out.flags = {"kv_cache_config=KvCacheConfig(dtype=\"auto\")"};
  out.command_example =
      "LLM(model=\"<model>\", kv_cache_config=KvCacheConfig(dtype=\"auto\", max_tokens=" + std::to_string(ctx) + "))";
  out.notes.push_back("dtype \"auto\" is the model's dtype: the spec's " +
                      std::string(KvFormatName(v.layers.front().k)) + " needs a checkpoint in that dtype");
  out.notes.push_back("fp8 cache: " + TrtCaps().fp8_blocker + "; kvaudit measures the cache alone");
  out.applies_to = "TensorRT-LLM LLM API (KvCacheConfig, docs 1.3.0rc27; features/kvcache.md @0076e939)";
  out.memory = PagedCacheMemory(v.layers, c, ctx, TensorRtLlmCells(), 0);
}

template <const Caps& (*C)()>
std::vector<std::string> AnalyzeWith(const TargetView& v, const ModelConfig&) {
  return Reasons(v, C(), nullptr);
}

template <const Caps& (*C)()>
std::vector<CacheConfig> CandidatesWith(const TargetView& v, const ModelConfig&) {
  return Candidates(v, C());
}

}  // namespace

const TargetRules& VllmEngine() {
  static const TargetRules impl{DeployTarget::kVllm, AnalyzeWith<VllmCaps>, CandidatesWith<VllmCaps>, VllmRender};
  return impl;
}

const TargetRules& SglangEngine() {
  static const TargetRules impl{DeployTarget::kSglang, AnalyzeWith<SglangCaps>, CandidatesWith<SglangCaps>,
                                SglangRender};
  return impl;
}

const TargetRules& TensorRtLlmEngine() {
  static const TargetRules impl{DeployTarget::kTensorRtLlm, AnalyzeWith<TrtCaps>, CandidatesWith<TrtCaps>, TrtRender};
  return impl;
}

}  // namespace kvaudit
