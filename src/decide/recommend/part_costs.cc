#include "decide/recommend/part_costs.h"

#include <algorithm>
#include <limits>

#include "base/status.h"

namespace kvaudit {
namespace {

// The costs of one candidate's parts of one tensor (K or V): `parts` indexes cr.parts.
void CostsOfTensor(const CandidateResult& cr, const ConfigResult& tensor_only, const std::vector<int>& parts,
                   std::vector<PartCost>* out) {
  double measured_sum = 0, unmeasured_proxy = 0;
  int min_measured = -1;
  for (int i : parts) {
    const PartResult& p = cr.parts[i];
    if (p.one_at_a_time) {
      const double kld = p.one_at_a_time->summary.overall.kld_mean;
      (*out)[i] = {kld, true};
      measured_sum += kld;
      if (min_measured < 0 || kld < (*out)[min_measured].kld) min_measured = i;
    } else {
      unmeasured_proxy += std::max(p.proxy, 0.0);
    }
  }
  const double remainder = tensor_only.summary.overall.kld_mean - measured_sum;
  for (int i : parts) {
    const PartResult& p = cr.parts[i];
    if (p.one_at_a_time) continue;
    const double score = std::max(p.proxy, 0.0);
    double kld = 0;
    if (remainder > 0 && unmeasured_proxy > 0) {
      kld = remainder * score / unmeasured_proxy;
    } else if (remainder > 0) {  // no proxy signal: an equal share
      kld = remainder / static_cast<double>(parts.size());
    } else if (min_measured >= 0) {
      const double ref = std::max(cr.parts[min_measured].proxy, 0.0);
      const double least = (*out)[min_measured].kld;
      kld = ref > 0 ? least * std::min(score / ref, 1.0) : least;
    }
    (*out)[i] = {kld, false};
  }
}

}  // namespace

std::vector<std::vector<PartCost>> PartCosts(const SensitivityResult& result) {
  std::vector<std::vector<PartCost>> out;
  for (const CandidateResult& cr : result.candidates) {
    std::vector<PartCost> costs(cr.parts.size());
    std::vector<int> k_parts, v_parts;
    for (size_t i = 0; i < cr.parts.size(); ++i) {
      (cr.parts[i].part.tensor == KvTensor::kK ? k_parts : v_parts).push_back(static_cast<int>(i));
    }
    CostsOfTensor(cr, cr.k_only, k_parts, &costs);
    CostsOfTensor(cr, cr.v_only, v_parts, &costs);
    for (const PartCost& c : costs) KV_CHECK(c.kld >= 0 && c.kld < std::numeric_limits<double>::infinity());
    out.push_back(std::move(costs));
  }
  return out;
}

}  // namespace kvaudit
