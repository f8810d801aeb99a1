// The per-engine settings of one configuration as a table for people and as JSON (docs/cli.md,
// `kvaudit deploy`); audit and recommend print their recommendation with the same functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decide/targets/target_settings.h"
#include "model/config.h"

namespace kvaudit {

struct DeployContext {
  std::string spec;   // canonical spec
  std::string model;  // as the user named it
  const ModelConfig* config = nullptr;
  int ctx = 0;
};

// A summary table (engine, exact, settings for, bytes/token, GiB), then one block per engine.
std::string DeployText(const DeployContext& ctx, const std::vector<TargetSettings>& targets);
// The same without the header (the summary table and the blocks): for a recommendation that was
// measured, where "nothing here is measured" would be false.
std::string DeployBody(const DeployContext& ctx, const std::vector<TargetSettings>& targets);
nlohmann::json DeployJson(const DeployContext& ctx, const std::vector<TargetSettings>& targets);

// One engine's KV memory as deploy and info print it: "0.750 GiB = 12 global layers 0.703 GiB +
// 12 sliding layers 0.047 GiB" (the split only for a model with sliding layers).
std::string MemoryTotalText(const KvMemory& memory);
// {kv_bytes_per_token, kv_bytes_at_target, kv_gib_at_target, memory_layout, global/sliding layers and bytes}.
nlohmann::json MemoryJson(const KvMemory& memory);

}  // namespace kvaudit
