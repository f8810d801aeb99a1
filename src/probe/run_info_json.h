// ProbeRunInfo as JSON and back: what a probe shard's manifest carries (run/shard_manifest.h) so
// `kvaudit merge` rebuilds results.json through ProbeResultsJson without the model (docs/scale-out.md).
#pragma once

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "probe/report.h"

namespace kvaudit {

nlohmann::json ProbeRunInfoToJson(const ProbeRunInfo& info);
Expected<ProbeRunInfo> ProbeRunInfoFromJson(const nlohmann::json& j);  // BadInput on a wrong shape

}  // namespace kvaudit
