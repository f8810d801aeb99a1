#include "decide/gate/gate_cases.h"

#include <algorithm>
#include <cmath>

#include "probe/binomial_interval.h"

namespace kvaudit::gate_cases {
namespace {

// "; about N more windows would likely decide it" when `factor` times the windows would.
std::string WindowsFactorText(double factor, int windows) {
  const double needed = std::ceil(windows * factor);
  if (needed > 50.0 * windows)
    return "; the estimate is close to the threshold: over 50 times the windows would be needed";
  const auto more = static_cast<long long>(std::max(1.0, needed - windows));
  return "; about " + std::to_string(more) + " more windows would likely decide it";
}

// "; about 60 more instances would likely decide it": the smallest count whose exact interval at
// the same rate clears the threshold (found by doubling, then bisection; the CP interval shrinks
// with n at a fixed rate).
std::string MoreInstancesText(const GateCase& c, int64_t k, int64_t n) {
  if (c.outcome != CaseOutcome::kInconclusive) return "";
  const double rate = static_cast<double>(k) / static_cast<double>(n);
  auto decided = [&](int64_t m) {
    const auto km = static_cast<int64_t>(std::llround(rate * static_cast<double>(m)));
    return Against(ClopperPearson95(km, m), c.threshold, false) != CaseOutcome::kInconclusive;
  };
  constexpr int64_t kMost = 1 << 16;  // beyond it, "more instances" is no practical answer (and slow to find)
  int64_t hi = 2 * n;
  while (hi < kMost && !decided(hi)) hi *= 2;
  if (rate == c.threshold || !decided(hi)) return "; the rate is on the threshold: more instances narrow the interval";
  int64_t lo = n;  // undecided
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (decided(mid) ? hi : lo) = mid;
  }
  return "; about " + std::to_string(hi - n) + " more instances would likely decide it";
}

}  // namespace

// A case before it is judged: pass and text follow from measured and threshold.
GateCase Case(std::string criterion, std::string scope, int from, int to, std::string family, std::string measure,
              double measured, double threshold) {
  GateCase c;
  c.criterion = std::move(criterion), c.scope = std::move(scope), c.from = from, c.to = to;
  c.family = std::move(family), c.measure = std::move(measure), c.measured = measured, c.threshold = threshold;
  return c;
}

std::string Range(int from, int to) { return std::to_string(from) + "-" + std::to_string(to); }

CaseOutcome Against(Interval ci, double threshold, bool is_min) {
  if (is_min ? ci.lo >= threshold : ci.hi <= threshold) return CaseOutcome::kPass;
  if (is_min ? ci.hi < threshold : ci.lo > threshold) return CaseOutcome::kFail;
  return CaseOutcome::kInconclusive;
}

// c.outcome and c.pass from its interval (its measured value where it has none) and the policy.
void Settle(GateCase& c, bool is_min, const AcceptancePolicy& policy) {
  c.outcome = Against(c.interval.value_or(Interval{c.measured, c.measured}), c.threshold, is_min);
  c.pass = c.outcome == CaseOutcome::kPass || (c.outcome == CaseOutcome::kInconclusive && !policy.InconclusiveFails());
}

// c.detail, and c.text: "top1_agree 0.972656 [0.9447, 0.9867] straddles 0.975 (top1_agree_min),
// context 65-128: 256 tokens in 4 windows".
void Describe(GateCase& c, bool is_min, std::string detail) {
  const char* op = c.outcome == CaseOutcome::kPass   ? (is_min ? ">=" : "<=")
                   : c.outcome == CaseOutcome::kFail ? (is_min ? "<" : ">")
                                                     : "straddles";
  c.text = c.measure + " " + GateNumber(c.measured) + IntervalText(c) + " " + op + " " + GateNumber(c.threshold) +
           " (" + c.criterion + "), " + c.scope + ": " + detail;
  c.detail = std::move(detail);
}

// "; about 12 more windows would likely decide it": the interval's half-width toward the threshold
// shrinks as 1/sqrt(windows), so it clears the threshold at about windows·(half/distance)².
std::string MoreWindowsText(const GateCase& c, int windows) {
  if (c.outcome != CaseOutcome::kInconclusive || !c.interval) return "";
  const double distance = std::fabs(c.measured - c.threshold);
  if (distance == 0 || windows <= 0) return "; the estimate is on the threshold: more windows narrow the interval";
  const double half = c.threshold > c.measured ? c.interval->hi - c.measured : c.measured - c.interval->lo;
  return WindowsFactorText((half / distance) * (half / distance), windows);
}

// The same for a case against a reference measured on the same windows, whose interval narrows
// too: with d the candidate's distance from the reference toward worse, both half-widths shrink as
// 1/sqrt(windows), so a worse candidate fails once d exceeds its better-side half-width plus the
// reference's worse-side one, and a better one passes once -d exceeds the difference of their
// worse-side half-widths.
std::string RelativeMoreWindowsText(const GateCase& c, const Interval& ref, double ref_value, bool is_min,
                                    int windows) {
  if (c.outcome != CaseOutcome::kInconclusive || !c.interval || windows <= 0) return "";
  const double d = is_min ? ref_value - c.measured : c.measured - ref_value;
  const double worse = is_min ? c.measured - c.interval->lo : c.interval->hi - c.measured;
  const double better = is_min ? c.interval->hi - c.measured : c.measured - c.interval->lo;
  const double ref_worse = is_min ? ref_value - ref.lo : ref.hi - ref_value;
  if (d == 0) return "; on par with the reference: more windows narrow both intervals alike";
  const double gap = d > 0 ? better + ref_worse : worse - ref_worse;
  return WindowsFactorText((gap / d) * (gap / d), windows);
}

// A probe rate (k of n) against its maximum: a maximum of 0 is a rule on the sample (any
// occurrence fails, none passes: no interval can clear 0), any other maximum is judged by the
// rate's exact interval.
void JudgeRate(GateCase& c, int64_t k, int64_t n, const AcceptancePolicy& policy, const std::string& counts) {
  if (c.threshold > 0 && n > 0) c.interval = ClopperPearson95(k, n);
  Settle(c, false, policy);
  Describe(c, false, counts + MoreInstancesText(c, k, n));
}

}  // namespace kvaudit::gate_cases
