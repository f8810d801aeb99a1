// What must hold for every acceptance policy, whatever the bytes: shared by the fuzz target
// (tests/fuzz/policy_fuzz.cc) and the replay of its corpus in the ordinary suite
// (tests/unit/decide_policy_corpus_test.cc). A rejected policy is one clean BadInput line (exit 2,
// a hint, naming the file); an accepted one judges something, its values are in range, its ranges
// are ascending and disjoint, and every bucket gets thresholds without a crash.
#pragma once

#include <string>

#include "decide/acceptance/policy.h"

namespace kvaudit::fuzz {

inline std::string PolicyErrorViolation(const Error& e, const std::string& source) {
  if (e.exit_code() != 2) return "exit code " + std::to_string(e.exit_code()) + ": " + e.message;
  if (e.message.empty() || e.message.find('\n') != std::string::npos) return "not one line: " + e.message;
  if (e.message.find("; hint: ") == std::string::npos) return "no hint: " + e.message;
  if (e.message.find(source) == std::string::npos) return "does not name " + source + ": " + e.message;
  return "";
}

inline std::string LimitsViolation(const FidelityLimits& l) {
  for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
    if (!l.limit[m]) continue;
    const double x = *l.limit[m];
    const auto metric = static_cast<FidelityMetric>(m);
    const bool fraction = metric == FidelityMetric::kTop1Agree;
    const bool ok = metric == FidelityMetric::kPplRatio ? x >= 1 : fraction ? (x >= 0 && x <= 1) : x >= 0;
    if (!ok) return std::string(Info(metric).key) + " out of range: " + std::to_string(x);
  }
  return "";
}

// "" when every invariant holds for a parse result, else the first one that broke.
inline std::string PolicyViolation(const Expected<AcceptancePolicy>& parsed, const std::string& source) {
  if (!parsed.ok()) return PolicyErrorViolation(parsed.error(), source);
  const AcceptancePolicy& p = *parsed;
  bool judges = p.fidelity.any() || !p.ranges.empty();
  for (size_t f = 0; f < kNumProbeFamilies; ++f) judges = judges || p.CriteriaOf(static_cast<ProbeFamily>(f)) > 0;
  if (!judges) return "accepted a policy without a criterion";
  if (p.target_context && *p.target_context < 1) return "target_context < 1";
  if (p.alpha && !(*p.alpha > 0 && *p.alpha < 1)) return "alpha outside (0, 1)";
  if (const std::string bad = LimitsViolation(p.fidelity); !bad.empty()) return bad;
  for (size_t i = 0; i < p.ranges.size(); ++i) {
    const FidelityRange& r = p.ranges[i];
    if (r.from < 1 || r.from > r.to) return "range " + std::to_string(r.from) + ".." + std::to_string(r.to);
    if (i > 0 && r.from <= p.ranges[i - 1].to) return "ranges overlap";
    if (!r.limits.any()) return "a range without thresholds";
    if (const std::string bad = LimitsViolation(r.limits); !bad.empty()) return bad;
  }
  for (int to = 16; to <= (1 << 16); to *= 2) {
    if (const std::string bad = LimitsViolation(p.LimitsFor(to / 2 + 1, to)); !bad.empty()) return "bucket " + bad;
  }
  return "";
}

}  // namespace kvaudit::fuzz
