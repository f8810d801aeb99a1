#include "probe/attribution.h"

#include <cstdio>

#include "probe/mcnemar.h"

namespace kvaudit {

ProbeAttribution AttributionFromCounts(int64_t both_pass, int64_t cache_induced, int64_t recovered, int64_t both_fail,
                                       double alpha) {
  ProbeAttribution a;
  a.both_pass = both_pass, a.cache_induced = cache_induced, a.recovered = recovered, a.both_fail = both_fail;
  a.n = both_pass + cache_induced + recovered + both_fail;
  if (a.n > 0) {
    const double n = static_cast<double>(a.n);
    a.baseline_pass_rate = static_cast<double>(a.both_pass + a.cache_induced) / n;
    a.config_pass_rate = static_cast<double>(a.both_pass + a.recovered) / n;
  }
  a.mcnemar_p = McNemarExactP(a.cache_induced, a.recovered);
  a.mcnemar_p_holm = a.mcnemar_p;
  a.significant = a.mcnemar_p_holm < alpha;
  return a;
}

ProbeAttribution AttributeProbes(std::span<const ProbeOutcome> outcomes, double alpha) {
  int64_t both_pass = 0, cache_induced = 0, recovered = 0, both_fail = 0;
  for (const ProbeOutcome& o : outcomes) {
    if (o.baseline_pass && o.config_pass) ++both_pass;
    if (o.baseline_pass && !o.config_pass) ++cache_induced;
    if (!o.baseline_pass && o.config_pass) ++recovered;
    if (!o.baseline_pass && !o.config_pass) ++both_fail;
  }
  return AttributionFromCounts(both_pass, cache_induced, recovered, both_fail, alpha);
}

const char* VerdictWords(const ProbeAttribution& a) {
  if (a.cache_induced + a.recovered == 0) return "no difference";
  return a.significant ? "significant after correction" : "not significant";
}

std::string DescribeAttribution(const ProbeAttribution& a, double alpha) {
  if (a.cache_induced + a.recovered == 0) return "0 cache-induced failures, 0 recoveries: no difference";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%lld cache-induced failure%s, %lld recover%s: %s "
                "(exact McNemar p = %.3g, Holm-adjusted p = %.3g %s %.2g)",
                static_cast<long long>(a.cache_induced), a.cache_induced == 1 ? "" : "s",
                static_cast<long long>(a.recovered), a.recovered == 1 ? "y" : "ies", VerdictWords(a), a.mcnemar_p,
                a.mcnemar_p_holm, a.significant ? "<" : ">=", alpha);
  return buf;
}

}  // namespace kvaudit
