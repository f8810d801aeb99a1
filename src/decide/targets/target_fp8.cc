// The paged-cache servers: vLLM, SGLang and TensorRT-LLM. Each stores K and V of a layer in one
// dtype: the model's (auto) or a quantized one — fp8 with per-tensor (vLLM also per-KV-head)
// scales, nvfp4 with a per-layer global scale, vLLM's per-token-head int8/fp8, SGLang's
// fp4_mx_block16; vLLM alone keeps chosen layers unquantized (--kv-cache-dtype-skip-layers).
// The dtype lists: vllm-project/vllm:vllm/config/cache.py CacheDType @002f10e0 (nvfp4_4over6 since
// PR #45187), sgl-project/sglang:python/sglang/srt/server_args.py @001067ff. Sources (docs/deployment.md):
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
  std::vector<KvFormat> have;  // full-precision types (as the model dtype) and quantized dtypes
  bool skip_layers;            // unquantized layers among quantized ones
  bool turboquant;             // vLLM's TurboQuant presets (K and V formats differ; end layers unquantized)
  bool unit_scale, calib_layer, calib_head;
  std::string quant_blocker;  // when set, no quantized cache is expressible, for this reason
};

const Caps& VllmCaps() {
  static const Caps c{
      DeployTarget::kVllm,
      "vLLM",
      "--kv-cache-dtype",
      {KvFormat::kF16, KvFormat::kBF16, KvFormat::kF32, KvFormat::kFp8E4M3, KvFormat::kFp8E5M2, KvFormat::kNvfp4,
       KvFormat::kNvfp4FourOverSix, KvFormat::kInt8PerTokenHead, KvFormat::kFp8PerTokenHead},
      true,
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
                      {KvFormat::kF16, KvFormat::kBF16, KvFormat::kF32, KvFormat::kFp8E4M3, KvFormat::kFp8E5M2,
                       KvFormat::kNvfp4, KvFormat::kFp4MxBlock16},
                      false,
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
                      false,
                      "the documented TensorRT-LLM routes to an fp8 or nvfp4 cache (ModelOpt hf_ptq.py --qformat with "
                      "--kv_cache_qformat fp8|nvfp4, a checkpoint whose kv_cache_quant_algo is FP8/NVFP4) quantize "
                      "the weights too"};
  return c;
}

// What the layers ask of a paged-cache engine: one quantized dtype for the quantized layers, one
// full-precision type (the model dtype) for the others.
struct Plan {
  std::optional<KvFormat> quant, full;
  const TurboQuantPreset* turboquant = nullptr;  // the quantized layers' TurboQuant preset (quant unset)
  std::vector<int> full_layers;
  HeadConfig quant_head;
};

std::string DtypeList(const Caps& caps) {
  std::string s = "auto";
  for (KvFormat f : caps.have) {
    if (!IsFullPrecision(f)) s += ", " + std::string(KvFormatName(f));
  }
  if (caps.turboquant) {
    for (const TurboQuantPreset& p : TurboQuantPresets()) s += ", " + std::string(p.name);
  }
  return s;
}

// The layers vLLM's TurboQuant keeps unquantized in this view ("0 1 6 7").
std::string EndLayerList(const TargetView& v) {
  std::string s;
  for (int l = 0; l < v.n_layers(); ++l) {
    if (IsEndLayer(l, v.n_layers())) s += (s.empty() ? "" : " ") + std::to_string(l);
  }
  return s;
}

// vLLM's TurboQuant layers (vllm/engine/arg_utils.py create_engine_config and TurboQuantConfig.
// get_boundary_skip_layers, config.py @1471680b): the end layers in the model dtype whatever the
// flags say, and k8v4's keys cast to fp8 without a scale.
std::string TurboQuantReason(const TargetView& v, const Plan& plan) {
  const std::string name(plan.turboquant->name);
  for (int i = 0; i < v.n_layers(); ++i) {
    if (IsEndLayer(i, v.n_layers()) && !IsFullPrecision(v.layers[i].k)) {
      return "vLLM keeps layers " + EndLayerList(v) + " (the first and last two) unquantized under " + name +
             ", and no flag turns that off (the spec kv=" + name + " measures it)";
    }
  }
  if (IsFp8(plan.turboquant->k) && plan.quant_head.scale != Fp8ScaleMode::kUnit)
    return name + " casts keys to fp8 without a scale (scale=unit)";
  return "";
}

// Layer by layer: K and V share a dtype (or a TurboQuant preset's pair); one quantized type and
// one full type overall.
std::string LayerReason(const TargetView& v, const Caps& caps, Plan& plan) {
  for (int i = 0; i < v.n_layers(); ++i) {
    const LayerKv l = v.layers[i];
    const bool quantized = !IsFullPrecision(l.k);
    const TurboQuantPreset* tq = caps.turboquant ? TurboQuantPresetFor(l.k, l.v) : nullptr;
    if (tq) {
      if (plan.quant || (plan.turboquant && plan.turboquant != tq))
        return caps.name + " has one " + caps.dtype_knob + " for all quantized layers";
      plan.turboquant = tq;
      plan.quant_head = v.heads[i];
      continue;
    }
    if (l.k != l.v) return caps.name + " stores K and V of a layer in one dtype (" + caps.dtype_knob + ")";
    if (quantized && plan.turboquant) return caps.name + " has one " + caps.dtype_knob + " for all quantized layers";
    if (quantized && !caps.quant_blocker.empty()) return caps.quant_blocker;
    if (std::find(caps.have.begin(), caps.have.end(), l.k) == caps.have.end()) {
      return std::string(KvFormatName(l.k)) + " is not a " + caps.name + " KV cache dtype (" + DtypeList(caps) +
             (quantized ? "" : "; auto = the model dtype") + ")";
    }
    std::optional<KvFormat>& slot = quantized ? plan.quant : plan.full;
    if (slot && *slot != l.k) {
      return quantized ? caps.name + " has one " + caps.dtype_knob + " for all quantized layers"
                       : caps.name + " keeps unquantized layers in the model dtype, one type";
    }
    slot = l.k;
    if (quantized)
      plan.quant_head = v.heads[i];
    else
      plan.full_layers.push_back(i);
  }
  if (plan.quant && plan.full && !caps.skip_layers)
    return caps.name + " quantizes the KV cache of every layer or of none";
  if (plan.turboquant) return TurboQuantReason(v, plan);
  return "";
}

// The scale of a dtype with a per-tensor scale (fp8, nvfp4): unit = the checkpoint carries none,
// calib = a checkpoint with calibrated per-layer (vLLM fp8 also per-head) k_scale/v_scale, ckpt =
// this checkpoint's own, as the engine loads them.
std::string ScaleReason(const TargetView& v, const Caps& caps, const Plan& plan) {
  if (!plan.quant || !HasTensorScale(*plan.quant)) return "";
  for (int i = 0; i < v.n_layers(); ++i) {
    const HeadConfig& p = v.heads[i];
    if (!IsFullPrecision(p.k) && (p.scale != plan.quant_head.scale || p.scale_by != plan.quant_head.scale_by)) {
      return caps.name + " has one scale setting for all quantized layers";
    }
  }
  const HeadConfig& p = plan.quant_head;
  const std::string name(KvFormatName(*plan.quant));
  if (p.scale == Fp8ScaleMode::kDynamic)
    return "scale=dynamic (an f32 scale per 32 elements) has no " + caps.name + " equivalent";
  // With scales in the checkpoint, scale 1.0 is no setting: it is what runs when a loader drops them.
  if (p.scale == Fp8ScaleMode::kUnit && v.ckpt_scales_per_layer > 0) {
    return caps.name + " loads this checkpoint's k_scale/v_scale (scale=ckpt); scale 1.0 runs only when its " +
           "loader drops them";
  }
  if (p.scale == Fp8ScaleMode::kUnit)
    return caps.unit_scale ? "" : caps.name + " takes its " + name + " scales from the checkpoint";
  if (*plan.quant == KvFormat::kFp8E5M2)
    return "no source was found that " + caps.name + " applies calibrated or checkpoint scales to fp8_e5m2";
  // nvfp4's kernels read one global scale per layer (vLLM: element 0 of k_scale).
  if (p.scale_by == Fp8ScaleBy::kHead && (!caps.calib_head || !IsFp8(*plan.quant)))
    return caps.name + " has per-tensor " + name + " scales only, not per KV head";
  if (p.scale_by == Fp8ScaleBy::kLayer && !caps.calib_layer)
    return caps.name + " has no calibrated per-tensor " + name + " scales";
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
    if (!HasTensorScale(p.k) && !HasTensorScale(p.v)) continue;
    // The nearest scale the engine has: calibrated per-layer scales for dynamic or per-head ones.
    // The checkpoint's own scales stay the checkpoint's (per-head ones where the engine takes them);
    // with them, scale 1.0 becomes them.
    const bool ckpt_runs = v.ckpt_scales_per_layer == 1 || (v.ckpt_scales_per_layer > 1 && caps.calib_head);
    if (ckpt_runs && (p.scale == Fp8ScaleMode::kCkpt || p.scale == Fp8ScaleMode::kUnit)) {
      extra.mods.scale = Fp8ScaleMode::kCkpt;
      if (v.ckpt_scales_per_layer > 1) extra.mods.scale_by = Fp8ScaleBy::kHead;
      break;
    }
    const Fp8ScaleMode given = Fp8ScaleMode::kCalib;
    if (p.scale != Fp8ScaleMode::kUnit && p.scale != Fp8ScaleMode::kDynamic && p.scale_by == Fp8ScaleBy::kHead &&
        caps.calib_head) {
      extra.mods.scale = given, extra.mods.scale_by = Fp8ScaleBy::kHead;
    } else if (p.scale != Fp8ScaleMode::kUnit || !caps.unit_scale) {
      extra.mods.scale = given;
    }
    break;
  }
  std::vector<CacheConfig> out;
  // TurboQuant layers: the presets as vLLM runs them (the end layers unquantized), first those
  // with the layers' K and V formats, then with their keys, then with their values.
  if (caps.turboquant) {
    for (int want : {3, 2, 1}) {
      for (const TurboQuantPreset& preset : TurboQuantPresets()) {
        const bool near = std::any_of(v.layers.begin(), v.layers.end(), [&](const LayerKv& l) {
          const bool tq =
              Format(l.k).family == FormatFamily::kTurboQuant || Format(l.v).family == FormatFamily::kTurboQuant;
          return tq && (l.k == preset.k ? 2 : 0) + (l.v == preset.v ? 1 : 0) == want;
        });
        if (near) out.push_back(CacheConfig::OfTurboQuantPreset(preset));
      }
    }
  }
  for (CacheConfig& c : StandInSpecs(v, caps.have, /*same_kv=*/true, caps.skip_layers, extra))
    out.push_back(std::move(c));
  return out;
}

uint64_t ScaleBytes(const Plan& plan, const ModelConfig& c, int n_fp8_layers) {
  if (!plan.quant || !HasTensorScale(*plan.quant)) return 0;
  const uint64_t per_layer =
      plan.quant_head.scale != Fp8ScaleMode::kUnit && plan.quant_head.scale_by == Fp8ScaleBy::kHead
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
  if (!plan.quant || !HasTensorScale(*plan.quant)) return;
  const HeadConfig& p = plan.quant_head;
  const std::string name(KvFormatName(*plan.quant));
  if (p.scale == Fp8ScaleMode::kUnit) {
    return;  // DroppedScales says it, next to the flags
  } else if (p.scale == Fp8ScaleMode::kCkpt) {
    notes.push_back("scale=ckpt: the checkpoint's own k_scale/v_scale tensors, read by kvaudit as " + caps.name +
                    " loads them (per " + (p.scale_by == Fp8ScaleBy::kHead ? "KV head" : "layer") + ")");
  } else if (caps.target == DeployTarget::kVllm) {
    notes.push_back(
        std::string("scale=calib needs a checkpoint with calibrated scales (llm-compressor kv_cache_scheme, "
                    "strategy \"") +
        (p.scale_by == Fp8ScaleBy::kHead ? "attn_head\"; per-head scales need the "
                                           "Flash Attention backend"
                                         : "tensor\"") +
        "; nvfp4: k_scale = amax/(6·448)); their values are its calibration's, not kvaudit's");
  } else {
    notes.push_back(
        "scale=calib: per-layer k/v scales from the checkpoint or --quantization-param-path (JSON: TP rank -> "
        "layer -> scale); their values are that calibration's, not kvaudit's");
  }
}

// The scale a quantized cache runs with when the checkpoint's k_scale/v_scale do not arrive.
std::string DroppedScales(const Plan& plan, const Caps& caps) {
  if (!plan.quant || !HasTensorScale(*plan.quant)) return "";
  const std::string name(KvFormatName(*plan.quant));
  const bool vllm = caps.target == DeployTarget::kVllm;
  // Reported drops: vllm-project/vllm issue #54623 (Qwen3.5, open), sgl-project/sglang issue #39942.
  const std::string dropped = vllm ? "vLLM issue #54623: Qwen3.5" : "SGLang issue #39942: Qwen3-MoE, Qwen2, Mixtral";
  if (plan.quant_head.scale == Fp8ScaleMode::kUnit) {
    return "scale 1.0 (what was measured, scale=unit) is what " + caps.name +
           " runs for a checkpoint without k_scale/v_scale, or whose loader drops them (" + dropped + "): " +
           (vllm ? "a one-time warning \"Using KV cache scaling factor 1.0\" from ModelOpt/FP8/Quark loaders, "
                   "nothing from compressed-tensors or an unquantized checkpoint"
                 : "SGLang warns \"no scaling factors provided\" whenever no --quantization-param-path is given, "
                   "scales or not");
  }
  return "if the checkpoint's scales do not load (" + dropped + "), " + name + " runs at scale 1.0 instead of " +
         (plan.quant_head.scale == Fp8ScaleMode::kCkpt ? "them" : "the calibrated scales") +
         ", with no error: measure the same spec with scale=unit too";
}

// vLLM's per-format conditions and silent defaults (vllm-project/vllm@d8eabdbf: flashinfer.py
// supports_kv_cache_dtype, triton_attn.py, quantization/kv_cache.py, utils/torch_utils.py
// resolve_kv_cache_dtype_string, attention.py).
// TurboQuant's silent defaults and caveats (docs/research/vllm-turboquant.md).
void TurboQuantNotes(const TargetView& v, const Plan& plan, TargetSettings& out) {
  out.silent_defaults.push_back("vLLM keeps layers " + EndLayerList(v) +
                                " (the first and last two) in the model dtype under every TurboQuant preset, "
                                "without a log line; --kv-cache-dtype-skip-layers can only add layers");
  if (IsFp8(plan.turboquant->k)) {
    out.silent_defaults.push_back(
        "turboquant_k8v4 on Ampere (SM < 8.9) stores keys as Triton's float8e4b15, not e4m3: kvaudit measures e4m3");
  }
  out.notes.push_back(
      "TurboQuant needs vLLM >= 0.20 (PR #38479); keys rotated by a plain Hadamard matrix since PR #40194 "
      "(v0.20.1), random signs before; MSE keys need a power-of-two head size");
  out.notes.push_back(
      "a prompt's first prefill chunk attends over its own unquantized K/V in vLLM (flash-attention on the raw "
      "tensors); kvaudit reads every position from the quantized cache, the decode path");
}

void VllmFormatNotes(const TargetView& v, const Plan& plan, TargetSettings& out) {
  if (plan.turboquant) {
    TurboQuantNotes(v, plan, out);
    return;
  }
  if (!plan.quant) {
    out.silent_defaults.push_back(
        "--kv-cache-dtype auto is fp8_e4m3 (or nvfp4) for a ModelOpt checkpoint whose kv_cache_quant_algo says so, "
        "and fp8 for a compressed-tensors checkpoint with a kv_cache_scheme: check config.json, or pass the model "
        "dtype (--kv-cache-dtype bfloat16|float16)");
    return;
  }
  if (const std::string d = DroppedScales(plan, VllmCaps()); !d.empty()) out.silent_defaults.push_back(d);
  const KvFormat f = *plan.quant;
  if (f == KvFormat::kNvfp4 || f == KvFormat::kNvfp4FourOverSix) {
    out.notes.push_back(
        "nvfp4 runs only on Blackwell (SM100) through FlashInfer's trtllm-gen kernels; they fold k_scale into the "
        "attention scale and quantize the queries to fp8 with q_scale (k_scale when the checkpoint has none); "
        "kvaudit keeps the queries f32");
    if (f == KvFormat::kNvfp4FourOverSix) out.notes.push_back("nvfp4_4over6 needs vLLM after PR #45187");
  }
  if (f == KvFormat::kInt8PerTokenHead || f == KvFormat::kFp8PerTokenHead) {
    out.silent_defaults.push_back(
        "per-token-head modes ignore the checkpoint's k_scale/v_scale (forced to 1.0): each token's scale is its "
        "own amax");
    if (f == KvFormat::kInt8PerTokenHead)
      out.notes.push_back(
          "int8 codes round half away from zero since PR #45361 (2026-06-22); earlier builds truncate toward zero");
  }
}

void VllmRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  Plan plan;
  Reasons(v, VllmCaps(), &plan);
  const std::string dtype = plan.turboquant ? std::string(plan.turboquant->name)
                            : plan.quant    ? std::string(KvFormatName(*plan.quant))
                                            : std::string("auto");
  out.flags = {"--kv-cache-dtype " + dtype};
  // TurboQuant adds its end layers itself; the flag names only the others.
  std::vector<int> skipped;
  for (int l : plan.full_layers) {
    if (!plan.turboquant || !IsEndLayer(l, v.n_layers())) skipped.push_back(l);
  }
  if ((plan.quant || plan.turboquant) && !skipped.empty())
    out.flags.push_back("--kv-cache-dtype-skip-layers " + Joined(skipped));
  if (plan.full) out.flags.push_back("--dtype " + DtypeFlagValue(*plan.full));
  // The per-token-head modes run on the Triton attention backend only (triton_attn.py).
  if (plan.quant && (*plan.quant == KvFormat::kInt8PerTokenHead || *plan.quant == KvFormat::kFp8PerTokenHead))
    out.flags.push_back("--attention-backend TRITON_ATTN");
  out.flags.push_back("--max-model-len " + std::to_string(ctx));
  out.command_example = "vllm serve <model>";
  for (const std::string& f : out.flags) out.command_example += " " + f;
  ScaleNotes(plan, VllmCaps(), out.notes);
  VllmFormatNotes(v, plan, out);
  if (plan.quant && IsFp8(*plan.quant)) {
    out.notes.push_back(
        "--calculate-kv-scales (scales from one warm-up batch) was deprecated in PR #37201 and removed in "
        "PR #49389 (2026-07-22); it is not used");
    out.notes.push_back(
        "with the Flash Attention 3 backend vLLM quantizes the queries to fp8 too; kvaudit keeps them in f32");
  }
  if ((plan.quant || plan.turboquant) && plan.full)
    out.notes.push_back(
        "skipped layers keep the model dtype (--dtype); vLLM may pad their pages to the quantized layers' page size");
  if (plan.full)
    out.notes.push_back(
        "--dtype sets the weights and activations too: the spec's full-precision type is the model dtype");
  out.applies_to =
      "vLLM main (quantized_kvcache.md @0609ba15, config/cache.py @002f10e0; nvfp4 and per-token-head dtypes read at "
      "d8eabdbf, nvfp4_4over6 since PR #45187); skip layers since PR #33695";
  if (plan.turboquant)
    out.applies_to += "; TurboQuant: turboquant/config.py @1471680b, store and decode kernels @0135d081 / @4ac35091";
  out.memory = PagedCacheMemory(v.layers, c, ctx, VllmCells(),
                                ScaleBytes(plan, c, v.n_layers() - static_cast<int>(plan.full_layers.size())));
}

// SGLang's per-format silent defaults (sgl-project/sglang: mem_cache/kv_cache_dtype.py @aff0d58a,
// layers/quantization/fp4_kv_cache_quant_method.py @02719cd1, layers/quantization/kv_cache.py @078e5e2a).
void SglangFormatNotes(const Plan& plan, TargetSettings& out) {
  if (!plan.quant) {
    out.silent_defaults.push_back(
        "--kv-cache-dtype auto is fp8_e4m3 for a checkpoint whose kv_cache_quant_algo is FP8: check config.json");
    return;
  }
  if (const std::string d = DroppedScales(plan, SglangCaps()); !d.empty()) out.silent_defaults.push_back(d);
  if (*plan.quant == KvFormat::kNvfp4) {
    out.silent_defaults.push_back(
        "nvfp4's global scale is the checkpoint's k_scale/v_scale (1.0 without) multiplied by 6 on SM100, which "
        "assumes an amax/(6·448) export; ModelOpt exports amax/448 since b0e7d9fd, so such a checkpoint runs a "
        "6x larger global scale there");
  }
  if (*plan.quant == KvFormat::kFp4MxBlock16) {
    out.notes.push_back(
        "fp4_mx_block16 was fp4_e2m1 (now an error); attention reads a bf16 copy of the dequantized rows");
  }
}

void SglangRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  Plan plan;
  Reasons(v, SglangCaps(), &plan);
  std::string dtype = plan.quant                     ? std::string(KvFormatName(*plan.quant))
                      : plan.full == KvFormat::kBF16 ? "bf16"
                                                     : "auto";
  out.flags = {"--kv-cache-dtype " + dtype};
  if (plan.full && *plan.full != KvFormat::kBF16) out.flags.push_back("--dtype " + DtypeFlagValue(*plan.full));
  // The JSON scale file is read for fp8_e4m3 only (load_model_utils.py load_kv_cache_scales); nvfp4
  // takes its global scales from the checkpoint.
  if (plan.quant && IsFp8(*plan.quant) && plan.quant_head.scale == Fp8ScaleMode::kCalib)
    out.flags.push_back("--quantization-param-path kv_cache_scales.json");
  out.flags.push_back("--context-length " + std::to_string(ctx));
  out.command_example = "python3 -m sglang.launch_server --model-path <model>";
  for (const std::string& f : out.flags) out.command_example += " " + f;
  ScaleNotes(plan, SglangCaps(), out.notes);
  SglangFormatNotes(plan, out);
  if (plan.quant)
    out.notes.push_back("check that the attention backend supports a quantized KV cache (quantized_kv_cache.md)");
  out.applies_to = "SGLang main (server_arguments.md @004813e1, quantized_kv_cache.md @03cd2ec4)";
  out.memory = PagedCacheMemory(v.layers, c, ctx, SglangCells(), ScaleBytes(plan, c, plan.quant ? v.n_layers() : 0));
}

void TrtRender(const TargetView& v, const ModelConfig& c, int ctx, TargetSettings& out) {
  out.flags = {"kv_cache_config=KvCacheConfig(dtype=\"auto\")"};
  out.command_example =
      "LLM(model=\"<model>\", kv_cache_config=KvCacheConfig(dtype=\"auto\", max_tokens=" + std::to_string(ctx) + "))";
  out.notes.push_back("dtype \"auto\" is the model's dtype: the spec's " +
                      std::string(KvFormatName(v.layers.front().k)) + " needs a checkpoint in that dtype");
  out.notes.push_back("fp8/nvfp4 cache: " + TrtCaps().quant_blocker + "; kvaudit measures the cache alone");
  out.silent_defaults.push_back(
      "KvCacheConfig(dtype=\"auto\") follows the checkpoint's kv_cache_quant_algo: an FP8/NVFP4 checkpoint runs an "
      "fp8/nvfp4 cache, and ModelOpt's default --kv_cache_qformat fp8_cast exports no k_scale/v_scale (scale 1.0)");
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
