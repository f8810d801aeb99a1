// The engines behind SettingsFor (target_settings.cc), one file per family. Each engine says
// which specs it runs exactly (Analyze: the reasons it cannot, empty when it can), proposes
// candidate specs for the rest, and renders the settings and memory of a spec it runs exactly.
// The driver keeps only candidates that Analyze accepts, so every approximation is a spec the
// engine runs as measured.
#pragma once

#include <string>
#include <vector>

#include "decide/targets/target_settings.h"
#include "decide/targets/target_view.h"

namespace kvaudit {

struct TargetRules {
  DeployTarget target;
  // Why the engine cannot store `view` exactly, most fundamental first; empty when it can.
  std::vector<std::string> (*analyze)(const TargetView& view, const ModelConfig& config);
  // Configurations the engine might run in place of `view`, closest first (the driver filters them).
  std::vector<CacheConfig> (*candidates)(const TargetView& view, const ModelConfig& config);
  // Fills flags, command_example, measure_spec, notes, applies_to and memory for a view that
  // analyze accepts.
  void (*render)(const TargetView& view, const ModelConfig& config, int ctx, TargetSettings& out);
};

const TargetRules& LlamaCppEngine();
const TargetRules& OllamaEngine();
const TargetRules& IkLlamaCppEngine();
const TargetRules& VllmEngine();
const TargetRules& SglangEngine();
const TargetRules& TensorRtLlmEngine();
const TargetRules& TransformersEngine();

// Shared by the engines.

// "sink=4: sinks, recent windows, outlier channels and pre-RoPE keys are kvaudit protections no
// engine has", or "" when the view has none.
std::string ProtectionReason(const TargetView& view);
// Candidates for an engine with formats `have`: the view's own per-layer pairs mapped to their
// nearest format in `have` (when per_layer), then the uniform stand-ins mapped, then k=f16,v=f16.
// same_kv: one format for K and V (each pair becomes the more precise of its two, then the other).
// `extra` keys go only into specs that quantize something.
// The cache types llama.cpp's -ctk/-ctv take that kvaudit has (common/arg.cpp kv_cache_types).
std::vector<KvFormat> LlamaCppCacheTypes();
std::string FormatList(const std::vector<KvFormat>& formats);  // "f16, q8_0, q4_0"
// The channel order of K in llama.cpp's llama/mistral GGUFs, for notes.
std::string PermutedKNote();
std::vector<CacheConfig> StandInSpecs(const TargetView& view, const std::vector<KvFormat>& have, bool same_kv,
                                      bool per_layer, const CandidateKeys& extra);

}  // namespace kvaudit
