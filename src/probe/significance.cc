#include "probe/significance.h"

#include <algorithm>
#include <numeric>

namespace kvaudit {

std::vector<double> HolmAdjust(std::span<const double> p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);  // [m] indices by ascending p, ties by index
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> adjusted(m);  // [m] input order
  double running = 0;               // the max over j ≤ i keeps the adjusted values monotone in p
  for (size_t i = 0; i < m; ++i) {
    const double scaled = std::min(1.0, static_cast<double>(m - i) * p[order[i]]);
    running = std::max(running, scaled);
    adjusted[order[i]] = running;
  }
  return adjusted;
}

void HolmCorrect(std::span<ProbeAttribution* const> family, double alpha) {
  std::vector<ProbeAttribution*> testable;  // b + c ≥ 2: the smallest attainable p is below 1
  std::vector<double> p;
  for (ProbeAttribution* a : family) {
    a->mcnemar_p_holm = 1.0;
    if (a->cache_induced + a->recovered >= 2) testable.push_back(a), p.push_back(a->mcnemar_p);
  }
  const std::vector<double> adjusted = HolmAdjust(p);
  for (size_t i = 0; i < testable.size(); ++i) testable[i]->mcnemar_p_holm = adjusted[i];
  for (ProbeAttribution* a : family) a->significant = a->mcnemar_p_holm < alpha;
}

ProbeAttribution PoolAttributions(std::span<const ProbeAttribution> cells, double alpha) {
  int64_t both_pass = 0, cache_induced = 0, recovered = 0, both_fail = 0;
  for (const ProbeAttribution& a : cells) {
    both_pass += a.both_pass, cache_induced += a.cache_induced, recovered += a.recovered, both_fail += a.both_fail;
  }
  return AttributionFromCounts(both_pass, cache_induced, recovered, both_fail, alpha);
}

}  // namespace kvaudit
