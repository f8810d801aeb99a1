// What `kvaudit audit --workload` stands for (docs/audit.md "Workloads"): the
// acceptance policy a workload is judged by when --policy is not given, and the probe families
// and variants that exercise what the workload loses first.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

struct Workload {
  std::string name;                   // "code", "retrieval", "chat"
  std::string policy;                 // its preset
  std::vector<std::string> families;  // probe --family
  std::vector<std::string> variants;  // probe --variant (one or more for each family that has variants)
  std::string why;                    // one line for the docs and the report
};

// BadInput naming --workload with the valid names for anything else.
Expected<Workload> WorkloadByName(const std::string& name);
const std::vector<std::string>& WorkloadNames();

}  // namespace kvaudit
