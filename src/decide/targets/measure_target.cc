#include "decide/targets/measure_target.h"

#include <algorithm>
#include <cctype>

#include "base/edit_distance.h"
#include "decide/targets/targets.h"
#include "decide/targets/target_view.h"

namespace kvaudit {
namespace {

// The engines' cache formats as kvaudit measures them (docs/deployment.md, "kvaudit format ->
// engine setting"): ollama's OLLAMA_KV_CACHE_TYPE values (fs/ggml/ggml.go SupportsKVCacheType);
// vLLM's and SGLang's --kv-cache-dtype with the model dtype (vllm/config/cache.py CacheDType
// @002f10e0, sglang server_args.py @001067ff); TensorRT-LLM's KvCacheConfig "auto"
// (no KV-only fp8 route and no f32 cache were found); transformers' DynamicCache and quanto int4.
std::vector<Target> MakeTargets() {
  using F = KvFormat;
  const std::vector<F> vllm = {F::kF32,
                               F::kF16,
                               F::kBF16,
                               F::kFp8E4M3,
                               F::kFp8E5M2,
                               F::kNvfp4,
                               F::kNvfp4FourOverSix,
                               F::kInt8PerTokenHead,
                               F::kFp8PerTokenHead,
                               F::kTurboQuantMse4,
                               F::kTurboQuantMse3,
                               F::kTurboQuantUniform4,
                               F::kTurboQuantUniform3};
  const std::vector<F> sglang = {F::kF32, F::kF16, F::kBF16, F::kFp8E4M3, F::kFp8E5M2, F::kNvfp4, F::kFp4MxBlock16};
  const std::string_view own_attention =
      "kvaudit's attention with f32 queries over the engine's cache format; the engine's kernels are not emulated";
  const std::string_view ggml =
      "engine=llama.cpp: llama.cpp's CPU forward pass (its flash attention, default rotation, weight products, "
      "RMSNorm, RoPE and SwiGLU, MoE experts; x86 AVX2 build; f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, "
      "q2_K-q6_K, iq4_xs, mxfp4 weights), emulated after llama.cpp master @145b6280, PR #21038 and @de3ff815";
  return {
      {"llama.cpp", DeployTarget::kLlamaCpp, AttentionMode::kLlamaCpp, LlamaCppCacheTypes(), ggml},
      {"ollama", DeployTarget::kOllama, AttentionMode::kLlamaCpp, {F::kF16, F::kQ8_0, F::kQ4_0}, ggml},
      {"vllm", DeployTarget::kVllm, AttentionMode::kNative, vllm, own_attention},
      {"sglang", DeployTarget::kSglang, AttentionMode::kNative, sglang, own_attention},
      {"tensorrt-llm", DeployTarget::kTensorRtLlm, AttentionMode::kNative, {F::kF16, F::kBF16}, own_attention},
      {"transformers",
       DeployTarget::kTransformers,
       AttentionMode::kNative,
       {F::kF32, F::kF16, F::kBF16, F::kInt4},
       own_attention},
      {"native", std::nullopt, AttentionMode::kNative, {}, "kvaudit's native reference engine, no engine emulated"},
  };
}

std::string LowerName(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string TargetNameList() {
  std::string s;
  for (const Target& t : Targets()) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

bool TargetHasFormat(const std::vector<KvFormat>& formats, KvFormat f) {
  return formats.empty() || std::find(formats.begin(), formats.end(), f) != formats.end();
}

// Every format a segment writes; a spec's unwritten defaults are f32.
std::vector<KvFormat> FormatsWritten(const CacheConfig& config) {
  std::vector<KvFormat> out;
  for (const KvSettings& s : config.Segments()) {
    out.push_back(s.k.value_or(KvFormat::kF32));
    out.push_back(s.v.value_or(KvFormat::kF32));
  }
  return out;
}

// A kvaudit-only protection llama.cpp has no form of (Validate refuses them under engine=llama.cpp).
bool WritesKvauditProtection(const CacheConfig& config) {
  for (const KvSettings& s : config.Segments()) {
    if (s.sink.value_or(0) || s.recent.value_or(0) || s.outliers.value_or(0) || s.pre_rope.value_or(false)) return true;
  }
  return false;
}

std::string JoinWords(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

// llama.cpp's flags without the environment line, and its rotation in words.
std::string GgmlMeasured(const Target& t, const TargetSettings& s, const TargetView& v) {
  std::vector<std::string> flags;
  bool disabled = false;
  for (const std::string& f : s.flags) {
    if (f == "LLAMA_ATTN_ROT_DISABLE=1")
      disabled = true;
    else
      flags.push_back(f);
  }
  std::string rot = "no rotation (full-precision cache)";
  if (disabled)
    rot = "rotation off (LLAMA_ATTN_ROT_DISABLE=1)";
  else if (v.AnyQuantized() && v.head_dim % 64 == 0)
    rot = "rotation on";
  else if (v.AnyQuantized())
    rot = "no rotation (head_dim " + std::to_string(v.head_dim) + " is not a multiple of 64)";
  const std::string runner = t.engine == DeployTarget::kOllama ? "ollama" : "llama-server";
  return "measured as " + runner + " runs it: " + JoinWords(flags, " ") + ", " + rot + " (" + std::string(t.emulation) +
         ")";
}

}  // namespace

const std::vector<Target>& Targets() {
  static const std::vector<Target> all = MakeTargets();
  return all;
}

const Target& LlamaCppTarget() { return Targets().front(); }
const Target& NativeTarget() { return Targets().back(); }

Expected<const Target*> TargetNamed(std::string_view name) {
  const std::string want = LowerName(name);
  const Target* best = nullptr;
  size_t best_d = 3;  // within two edits
  for (const Target& t : Targets()) {
    if (want == t.name) return &t;
    const size_t d = EditDistance(want, t.name);
    if (d < best_d) best = &t, best_d = d;
  }
  const std::string mean = best ? "did you mean " + std::string(best->name) + "? " : "";
  return BadInput("--target " + std::string(name) + ": not a target; hint: " + mean + "targets: " + TargetNameList());
}

const Target& DefaultTarget(const std::vector<CacheConfig>& configs) {
  const Target& llama = LlamaCppTarget();
  for (const CacheConfig& c : configs) {
    if (c.attention_written() == AttentionMode::kNative || WritesKvauditProtection(c)) return NativeTarget();
    for (KvFormat f : FormatsWritten(c)) {
      if (!TargetHasFormat(llama.formats, f)) return NativeTarget();
    }
  }
  return llama;
}

Expected<CacheConfig> UnderTarget(const Target& target, const CacheConfig& config, std::string_view origin) {
  for (KvFormat f : FormatsWritten(config)) {
    if (TargetHasFormat(target.formats, f)) continue;
    return BadInput(std::string(origin) + " \"" + config.spec() + "\": " + std::string(KvFormatName(f)) +
                    " is not a cache format of --target " + std::string(target.name) + " (" +
                    FormatList(target.formats) + "); hint: use one of those, or --target native to measure " +
                    "kvaudit's own formats");
  }
  return WithTargetEngine(target, config);
}

CacheConfig WithTargetEngine(const Target& target, const CacheConfig& config) {
  if (config.attention_written() || target.attention == AttentionMode::kNative) return config;
  return config.WithAttention(target.attention);
}

std::string AddReferenceConfig(const Target& target, const CacheConfig& reference, std::vector<std::string>* specs) {
  const std::string spec = WithTargetEngine(target, reference).spec();
  if (std::find(specs->begin(), specs->end(), spec) == specs->end()) specs->push_back(spec);
  return spec;
}

std::string MeasuredLine(const Target& target, const CacheConfig& config, const ModelConfig& model, int ctx) {
  if (!target.engine) return "measured with " + std::string(target.emulation) + " (--target native): " + config.spec();
  // A spec that writes engine= keeps it, so the emulation is the spec's, not the target's.
  const std::string_view how = config.attention() == target.attention           ? target.emulation
                               : config.attention() == AttentionMode::kLlamaCpp ? LlamaCppTarget().emulation
                                                                                : NativeTarget().emulation;
  const TargetSettings s = SettingsForTarget(*target.engine, config, model, std::max(ctx, 1));
  const std::string name(TargetName(*target.engine));
  if (!s.exact) {
    return "measured " + config.spec() + " (" + std::string(how) + "); " + name +
           " does not run it as measured: " + s.why_not;
  }
  if (config.attention() == AttentionMode::kLlamaCpp) return GgmlMeasured(target, s, TargetView::Of(config, model));
  return "measured as " + name + " stores it: " + JoinWords(s.flags, " ") + " (" + std::string(how) + ")";
}

}  // namespace kvaudit
