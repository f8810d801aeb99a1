// `kvaudit audit`'s verdict block and results.json (docs/audit.md; docs/results-schema.md
// "`kvaudit audit` results"): per configuration its memory, PASS/FAIL, the context it is safe up
// to and the criterion that failed first; what to deploy, with each engine's settings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decide/audit.h"
#include "decide/engine_settings.h"

namespace kvaudit {

Expected<nlohmann::json> AuditJson(const AuditResult& r, const AuditPlan& plan);
std::string AuditText(const AuditResult& r, const AuditPlan& plan);

// One line per engine: "llama.cpp     -ctk q8_0 -ctv q4_0 -fa on", or what it runs instead; an
// engine's closest configuration is marked "verified, PASS" when it is one of `passing` (specs
// this run verified), else "not verified".
std::string EngineLines(const std::vector<EngineSettings>& engines, const std::string& indent,
                        const std::vector<std::string>& passing);

}  // namespace kvaudit
