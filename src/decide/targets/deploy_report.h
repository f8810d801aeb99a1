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

}  // namespace kvaudit
