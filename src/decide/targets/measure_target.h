// --target: the deployment engine a measurement stands for (audit, recommend, sensitivity,
// deploy). A target chooses how kvaudit computes a plain spec and which cache formats it may name:
// under llama.cpp (and ollama, which runs llama-server) `k=q8_0,v=q4_0` is measured as
// `k=q8_0,v=q4_0,engine=llama.cpp`, llama.cpp's CPU flash attention with its default rotation of
// quantized caches (docs/formats.md "engine=llama.cpp: what is emulated"); `native` is kvaudit's
// reference engine. A spec that writes `engine=` keeps it; `rot=` keeps its meaning under the
// target's engine (rot=0 under llama.cpp is LLAMA_ATTN_ROT_DISABLE=1). docs/deployment.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "decide/targets/target_settings.h"
#include "kv/config/cache_config.h"
#include "model/config.h"

namespace kvaudit {

struct Target {
  std::string_view name;                             // as --target takes it: "llama.cpp", "vllm", "native", ...
  std::optional<DeployTarget> engine;                // its deploy rules (target_settings.h); nullopt: native
  AttentionMode attention = AttentionMode::kNative;  // the engine= a plain spec is measured with
  std::vector<KvFormat> formats;                     // the cache formats it runs; empty: every kvaudit format
  std::string_view emulation;                        // how kvaudit computes it, for the measured line
};

// Every target, in the order docs/cli.md lists them.
const std::vector<Target>& Targets();
const Target& NativeTarget();
const Target& LlamaCppTarget();
// Case-insensitive; an unknown name is BadInput: `--target NAME: not a target; hint: did you mean
// ...? (targets: ...)`.
Expected<const Target*> TargetNamed(std::string_view name);
// What a job measures without --target: llama.cpp when every configuration is one llama.cpp runs
// as one cache type per tensor (its -ctk/-ctv types, no kvaudit-only protection, no engine=native),
// else native.
const Target& DefaultTarget(const std::vector<CacheConfig>& configs);

// `config` computed by the target's engine unless the spec writes engine= (no check of its formats:
// a baseline is the reference, not a deployment).
CacheConfig WithTargetEngine(const Target& target, const CacheConfig& config);
// `config` as `target` runs it: WithTargetEngine after checking its formats. A format the
// target lacks is BadInput naming `origin`, the spec and the target's formats.
Expected<CacheConfig> UnderTarget(const Target& target, const CacheConfig& config, std::string_view origin);

// A policy's reference configuration (relative_to) appended to a job's canonical `specs` unless it
// is one of them, as `target` measures it (WithTargetEngine: its formats not checked, since like
// the baseline it is a yardstick, not a deployment). Returns its spec.
std::string AddReferenceConfig(const Target& target, const CacheConfig& reference, std::vector<std::string>* specs);

// One line (no newline) saying what was measured for `config` in the target's words, e.g.
// "measured as llama-server runs it: -ctk q8_0 -ctv q4_0 -fa on, rotation on (engine=llama.cpp, ...)".
std::string MeasuredLine(const Target& target, const CacheConfig& config, const ModelConfig& model, int ctx);

}  // namespace kvaudit
