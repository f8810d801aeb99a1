// The work an audit does, unit by unit, as the audit plans it before any compute: its eval windows
// (AuditPlan::Make) and its probe units (ProbePlan::Make of the audit's probe options), one JSON
// line each: the stage, the unit's id, the prompt's tokens, the tokens generated at most, the cache
// runs it puts them through (the baseline and each configuration; a variance prompt once per
// sample). Without --budget (the recommendation's work is planned only when its stage runs). The
// input of the long-context cost model (bench/longctx_cost.py; docs/scale-out.md "Cost model").
//   audit_work MODEL DATA CTX WINDOWS WORKLOAD LENGTHS [SPEC ...]
// LENGTHS: the probe lengths, comma-separated (--lengths), or "default" (512, 1024, 2048, 4096,
// capped at the target context).
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "decide/audit/audit.h"
#include "probe/plan.h"

using namespace kvaudit;

namespace {

void PrintUnit(const std::string& stage, const std::string& id, size_t prompt, int64_t generated, int64_t runs) {
  const nlohmann::json j = {{"stage", stage}, {"id", id}, {"prompt", prompt}, {"generated", generated}, {"runs", runs}};
  std::printf("%s\n", j.dump().c_str());
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "audit_work: %s\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) return Fail("usage: audit_work MODEL DATA CTX WINDOWS WORKLOAD LENGTHS [SPEC ...]");
  AuditOptions o;
  o.model = argv[1];
  o.data = argv[2];
  o.ctx = std::atoi(argv[3]);
  o.windows = std::atoi(argv[4]);
  o.workload = argv[5];
  if (std::string(argv[6]) != "default") {
    std::stringstream lengths(argv[6]);
    for (std::string one; std::getline(lengths, one, ',');) o.probe_lengths.push_back(std::atoi(one.c_str()));
  }
  for (int i = 7; i < argc; ++i) o.kv.kv.push_back(argv[i]);
  auto audit = AuditPlan::Make(o);
  if (!audit.ok()) return Fail(audit.error().message);
  const EvalPlan& eval = *audit.value().eval;
  const int64_t eval_runs = 1 + static_cast<int64_t>(eval.configs.n_configs());
  for (size_t w = 0; w < eval.windows.size(); ++w)
    PrintUnit("eval", "window " + std::to_string(eval.options.first_window + w), eval.windows[w].size(), 0, eval_runs);
  auto probe = ProbePlan::Make(audit.value().probe);
  if (!probe.ok()) return Fail(probe.error().message);
  const ProbePlan& p = probe.value();
  const int64_t runs = 1 + static_cast<int64_t>(p.configs.n_configs());
  for (const ProbeInstance& i : p.instances) PrintUnit("probe", i.id, i.prompt.size(), i.max_tokens, runs);
  for (const FreePrompt& v : p.variance)
    PrintUnit("probe", v.id, v.prompt.size(), p.options.variance_tokens, runs * p.options.samples);
  for (const FreePrompt& d : p.drift) PrintUnit("probe", d.id, d.prompt.size(), p.options.drift_tokens, runs);
  return 0;
}
