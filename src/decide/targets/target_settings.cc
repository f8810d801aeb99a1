#include "decide/targets/target_settings.h"

#include <algorithm>
#include <array>
#include <optional>

#include "decide/targets/targets.h"

namespace kvaudit {
namespace {

constexpr std::array<DeployTarget, 7> kEngines = {
    DeployTarget::kLlamaCpp, DeployTarget::kIkLlamaCpp,  DeployTarget::kOllama,      DeployTarget::kVllm,
    DeployTarget::kSglang,   DeployTarget::kTensorRtLlm, DeployTarget::kTransformers};

// At most this many approximations: the caller verifies each end to end.
constexpr size_t kMaxApproximations = 4;

const TargetRules& ImplOf(DeployTarget e) {
  switch (e) {
    case DeployTarget::kLlamaCpp: return LlamaCppEngine();
    case DeployTarget::kIkLlamaCpp: return IkLlamaCppEngine();
    case DeployTarget::kOllama: return OllamaEngine();
    case DeployTarget::kVllm: return VllmEngine();
    case DeployTarget::kSglang: return SglangEngine();
    case DeployTarget::kTensorRtLlm: return TensorRtLlmEngine();
    case DeployTarget::kTransformers: return TransformersEngine();
  }
  KV_CHECK_MSG(false, "unknown engine");
  return LlamaCppEngine();
}

// A candidate the engine runs exactly, as its view; nullopt when it is not valid for the model or
// the engine would not run it as written.
std::optional<TargetView> ExactCandidate(const TargetRules& impl, const CacheConfig& candidate, const ModelConfig& c) {
  if (!candidate.Validate(c, /*have_calibration=*/true).ok()) return std::nullopt;
  TargetView view = TargetView::Of(candidate, c);
  if (!impl.analyze(view, c).empty()) return std::nullopt;
  return view;
}

}  // namespace

bool RunsExactly(DeployTarget target, const CacheConfig& cache_config, const ModelConfig& config) {
  return ExactCandidate(ImplOf(target), cache_config, config).has_value();
}

std::span<const DeployTarget> AllTargets() { return kEngines; }

std::vector<std::string> TargetSettings::ApproximationSpecs() const {
  std::vector<std::string> out;  // [approximations]
  for (const CacheConfig& a : approximations) out.push_back(a.spec());
  return out;
}

std::string_view TargetName(DeployTarget e) {
  switch (e) {
    case DeployTarget::kLlamaCpp: return "llama.cpp";
    case DeployTarget::kIkLlamaCpp: return "ik_llama.cpp";
    case DeployTarget::kOllama: return "ollama";
    case DeployTarget::kVllm: return "vLLM";
    case DeployTarget::kSglang: return "SGLang";
    case DeployTarget::kTensorRtLlm: return "TensorRT-LLM";
    case DeployTarget::kTransformers: return "transformers";
  }
  return "?";
}

std::string ProtectionReason(const TargetView& view) {
  const std::string p = view.KvauditOnlyProtections();
  if (p.empty()) return "";
  return p + ": sinks, recent windows, outlier channels and pre-RoPE keys are kvaudit protections no engine has";
}

std::vector<CacheConfig> StandInSpecs(const TargetView& view, const std::vector<KvFormat>& have, bool same_kv,
                                      bool per_layer, const CandidateKeys& extra) {
  const int hd = view.head_dim;
  auto map = [&](LayerKv l) { return LayerKv{Nearest(l.k, have, hd), Nearest(l.v, have, hd)}; };
  // One format for both tensors: the more precise of the two first (keys matter more, and it never
  // stores a tensor below the spec), then the other.
  auto unified = [&](LayerKv l) {
    const KvFormat hi = DefaultBits(l.k, hd) >= DefaultBits(l.v, hd) ? l.k : l.v;
    const KvFormat lo = hi == l.k ? l.v : l.k;
    return std::vector<LayerKv>{{hi, hi}, {lo, lo}};
  };
  // The extra keys (scales, rotation, groups) only mean something where a tensor is quantized.
  auto quantized = [](const LayerKv& l) { return !IsFullPrecision(l.k) || !IsFullPrecision(l.v); };
  auto pair_spec = [&](const LayerKv& l) { return PairSpec(l, quantized(l) ? extra : CandidateKeys{}); };
  std::vector<CacheConfig> out;
  if (per_layer) {
    std::vector<LayerKv> layers;
    for (const LayerKv& l : view.layers) layers.push_back(same_kv ? unified(map(l)).front() : map(l));
    const bool any = std::any_of(layers.begin(), layers.end(), quantized);
    out.push_back(LayeredSpec(layers, any ? extra : CandidateKeys{}));
  }
  for (const LayerKv& pair : UniformStandIns(view)) {
    const LayerKv m = map(pair);
    if (!same_kv) {
      out.push_back(pair_spec(m));
      continue;
    }
    for (const LayerKv& u : unified(m)) out.push_back(pair_spec(u));
  }
  out.push_back(PairSpec({KvFormat::kF16, KvFormat::kF16}));
  return out;
}

TargetSettings SettingsForTarget(DeployTarget target, const CacheConfig& cache_config, const ModelConfig& config,
                                 int target_ctx) {
  const TargetRules& impl = ImplOf(target);
  const TargetView view = TargetView::Of(cache_config, config);
  TargetSettings out;
  out.target = target;
  const std::vector<std::string> reasons = impl.analyze(view, config);
  if (reasons.empty()) {
    out.exact = true;
    out.settings_for = view.spec;
    const std::string dropped = cache_config.WithoutScales().spec();
    if (dropped != view.spec) out.scales_dropped_spec = dropped;
    impl.render(view, config, target_ctx, out);
    return out;
  }
  out.why_not = reasons.front();
  std::optional<TargetView> first;
  for (const CacheConfig& candidate : impl.candidates(view, config)) {
    if (out.approximations.size() == kMaxApproximations) break;
    std::optional<TargetView> cv = ExactCandidate(impl, candidate, config);
    if (!cv || candidate == cache_config) continue;
    if (std::find(out.approximations.begin(), out.approximations.end(), candidate) != out.approximations.end())
      continue;
    out.approximations.push_back(candidate);
    if (!first) first = std::move(cv);
  }
  if (first) {
    out.settings_for = first->spec;
    impl.render(*first, config, target_ctx, out);
  }
  return out;
}

Expected<std::vector<TargetSettings>> SettingsFor(const CacheConfig& cache_config, const ModelConfig& config,
                                                  int target_ctx) {
  if (target_ctx < 1) {
    return BadInput("deploy: target context " + std::to_string(target_ctx) + " tokens; hint: pass --ctx N with N >= 1");
  }
  KV_RETURN_IF_ERROR(cache_config.Validate(config, /*have_calibration=*/true));
  std::vector<TargetSettings> out;
  for (DeployTarget e : AllTargets()) out.push_back(SettingsForTarget(e, cache_config, config, target_ctx));
  return out;
}

}  // namespace kvaudit
