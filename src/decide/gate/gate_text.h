// The gate's report on the terminal (a verdict block) and as one JSON document (--json); shapes in
// docs/decision.md "Gate".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "decide/gate/gate.h"

namespace kvaudit {

std::string GateVerdictText(const GateReport& report);
nlohmann::json GateJson(const GateReport& report);

}  // namespace kvaudit
