// How a kvaudit cache configuration runs in each inference engine:
// whether the engine can store exactly what the spec measured, the settings that realise it (or
// the closest configurations it can run), and the KV memory those settings take for this model in
// the engine's own layout. Every flag and its source: docs/deployment.md.
//
// Candidates only: `recommend` verifies approximations end to end; nothing here claims that any
// of them passes a policy.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "decide/targets/kv_memory.h"
#include "kv/config/cache_config.h"
#include "model/config.h"

namespace kvaudit {

enum class DeployTarget { kLlamaCpp, kIkLlamaCpp, kOllama, kVllm, kSglang, kTensorRtLlm, kTransformers };

std::span<const DeployTarget> AllTargets();   // in the order above
std::string_view TargetName(DeployTarget e);  // "llama.cpp", "ik_llama.cpp", "ollama", "vLLM", ...

// The memory of the same settings with one more engine flag.
struct MemoryVariant {
  std::string flag;  // as the engine spells it ("--swa-full")
  KvMemory memory;
};

struct TargetSettings {
  DeployTarget target = DeployTarget::kLlamaCpp;
  bool exact = false;                       // the engine stores the same formats for the same tensors
                                            // with the same protections
  std::string why_not;                      // one line; empty when exact
  std::vector<CacheConfig> approximations;  // what the engine runs exactly, closest first (when !exact)
  std::string settings_for;                 // the spec the settings below realise: the input spec when
                                            // exact, else approximations[0] ("" if none)
  std::string scales_dropped_spec;          // exact: settings_for with every scale at 1.0, as the engine runs it
                                            // when the checkpoint's scales do not load ("" if it reads none)
  std::vector<std::string> flags;           // flags, NAME=value environment lines, or API arguments
  std::string command_example;
  std::string measure_spec;        // the kvaudit spec that measures what these settings run
                                   // (llama.cpp and ollama: its engine=llama.cpp emulation)
  std::vector<std::string> notes;  // rotation, scales, version caveats
  // What the engine does without a word that changes what runs for these flags (scales dropped
  // to 1.0, auto meaning fp8, layers left unquantized): printed next to the flags everywhere.
  std::vector<std::string> silent_defaults;
  std::string applies_to;                      // the version/commit the settings are cited at
  KvMemory memory;                             // of settings_for, in this engine's layout
  std::vector<MemoryVariant> memory_variants;  // llama.cpp --swa-full, for a model with sliding layers

  std::vector<std::string> ApproximationSpecs() const;  // as results name them (CacheConfig::spec)
};

// Every engine of AllTargets() for one configuration. Errors (exit 2): a spec the model cannot
// take (CacheConfig::Validate, without the calibration requirement: nothing is computed here), or
// target_ctx < 1.
Expected<std::vector<TargetSettings>> SettingsFor(const CacheConfig& cache_config, const ModelConfig& config,
                                                  int target_ctx);
// Whether the engine stores exactly what the configuration measures (SettingsForTarget's `exact`,
// without computing its settings or approximations); false for a configuration the model cannot take.
bool RunsExactly(DeployTarget target, const CacheConfig& cache_config, const ModelConfig& config);
// One engine; the configuration must already be valid for the model.
TargetSettings SettingsForTarget(DeployTarget target, const CacheConfig& cache_config, const ModelConfig& config,
                                 int target_ctx);

}  // namespace kvaudit
