// The gate's report as markdown fit for a pull-request comment (kvaudit gate --markdown FILE): the
// verdict table first, then every failing case.
#pragma once

#include <string>

#include "decide/gate/gate.h"

namespace kvaudit {

std::string GateMarkdown(const GateReport& report);

}  // namespace kvaudit
