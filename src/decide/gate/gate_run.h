// `kvaudit gate` as a library: the policy and the results read and checked, every configuration
// judged, the JUnit and markdown files written. The CLI main only parses flags, calls RunGate and
// prints (docs/decision.md "Gate").
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "decide/gate/gate.h"

namespace kvaudit {

struct GateOptions {
  std::vector<std::string> results;  // eval, probe or audit output directories
  std::string policy;                // a preset name or a TOML file; "": the one the audit directories recorded
  std::string model;                 // "": no check against a model
  std::string junit, markdown;       // "": not written
};

// BadInput for any problem of the inputs (nothing written then); the report otherwise, whatever
// the verdict (report.exit_code() is 0 or 1).
Expected<GateReport> RunGate(const GateOptions& options);

}  // namespace kvaudit
