// `kvaudit audit`'s verdict block and results.json (docs/audit.md; docs/results-schema.md
// "`kvaudit audit` results"): per configuration its memory, PASS/FAIL, the context it is safe up
// to and the criterion that failed first; what to deploy, with each engine's settings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decide/audit/audit.h"
#include "decide/targets/target_settings.h"

namespace kvaudit {

Expected<nlohmann::json> AuditJson(const AuditResult& r, const AuditPlan& plan);
std::string AuditText(const AuditResult& r, const AuditPlan& plan);

}  // namespace kvaudit
