#include "probe/attribution.h"

#include <cstdio>

#include "probe/mcnemar.h"

namespace kvaudit {

ProbeAttribution AttributeProbes(std::span<const ProbeOutcome> outcomes, double alpha) {
  ProbeAttribution a;
  for (const ProbeOutcome& o : outcomes) {
    ++a.n;
    if (o.baseline_pass && o.config_pass) ++a.both_pass;
    if (o.baseline_pass && !o.config_pass) ++a.cache_induced;
    if (!o.baseline_pass && o.config_pass) ++a.recovered;
    if (!o.baseline_pass && !o.config_pass) ++a.both_fail;
  }
  if (a.n > 0) {
    const double n = static_cast<double>(a.n);
    a.baseline_pass_rate = static_cast<double>(a.both_pass + a.cache_induced) / n;
    a.config_pass_rate = static_cast<double>(a.both_pass + a.recovered) / n;
  }
  a.mcnemar_p = McNemarExactP(a.cache_induced, a.recovered);
  a.significant = a.mcnemar_p < alpha;
  return a;
}

std::string DescribeAttribution(const ProbeAttribution& a, double alpha) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%lld cache-induced failure%s, %lld recover%s: %s (exact McNemar p = %.3g %s %.2g)",
                static_cast<long long>(a.cache_induced), a.cache_induced == 1 ? "" : "s",
                static_cast<long long>(a.recovered), a.recovered == 1 ? "y" : "ies",
                a.significant ? "significant" : "not significant", a.mcnemar_p, a.significant ? "<" : ">=",
                alpha);
  return buf;
}

}  // namespace kvaudit
