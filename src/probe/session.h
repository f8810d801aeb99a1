// `kvaudit probe` as a library, part 2 (docs/probes.md): a session runs a ProbePlan under
// the baseline and every configuration, resuming from DIR/progress.jsonl (instances recorded there
// are read back, not rerun), and writes DIR/results.json. The CLI main only parses flags, builds
// the plan, runs it and prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "probe/plan.h"
#include "probe/report.h"

namespace kvaudit {

struct ProbeSessionResult {
  ProbeRunInfo info;
  std::vector<ProbeRecord> probes;
  std::vector<VarianceRecord> variance;
  std::vector<DriftRecord> drift;
  std::string results_path;  // DIR/results.json, written (a --shard run: DIR/shard.json)
  nlohmann::json results;    // its content (a --shard run: null; results come from `kvaudit merge`)
};

class ProbeSession {
 public:
  explicit ProbeSession(const ProbePlan& plan) : plan_(plan) {}
  Expected<ProbeSessionResult> Run();

 private:
  ProbeRunInfo Info() const;
  // shard.json's summary: the run's inputs, the record id of each owned unit, the unit counts.
  nlohmann::json ShardSummary(const ProbeSessionResult& out, const std::vector<uint8_t>& owned) const;

  const ProbePlan& plan_;
};

}  // namespace kvaudit
