#include "probe/units.h"

namespace kvaudit {

ProbeUnitCounts UnitCounts(const ProbePlan& plan) {
  return {plan.instances.size(), plan.variance.size(), plan.drift.size()};
}

std::string UnitId(const ProbePlan& plan, size_t u) {
  const ProbeUnitCounts n = UnitCounts(plan);
  if (u < n.instances) return plan.instances[u].id;
  if (u < n.instances + n.variance) return plan.variance[u - n.instances].id;
  return plan.drift[u - n.instances - n.variance].id;
}

std::vector<int64_t> UnitCosts(const ProbePlan& plan) {
  const ProbeOptions& o = plan.options;
  const int64_t caches = 1 + static_cast<int64_t>(plan.configs.n_configs() + plan.remote.configs().size());
  std::vector<int64_t> costs;  // [n_units]
  for (const ProbeInstance& i : plan.instances)
    costs.push_back((static_cast<int64_t>(i.prompt.size()) + i.max_tokens) * caches);
  for (const FreePrompt& p : plan.variance) {
    costs.push_back(o.samples * (static_cast<int64_t>(p.prompt.size()) + o.variance_tokens) * caches);
  }
  for (const FreePrompt& p : plan.drift)
    costs.push_back((static_cast<int64_t>(p.prompt.size()) + o.drift_tokens) * caches);
  return costs;
}

}  // namespace kvaudit
