#include "decide/gate/gate_probes.h"

#include <algorithm>
#include <cmath>

#include "probe/binomial_interval.h"

namespace kvaudit::gate_cases {
namespace {

std::string MissingFamilyHint(ProbeFamily f, const std::string& spec) {
  const std::string family = FamilyName(f);
  return "run kvaudit probe --kv " + spec + " --family " + family +
         (f == ProbeFamily::kCustom ? " --custom FILE" : "") + " --out DIR and pass --results DIR, or make " + family +
         " not required";
}

// The family's criteria as skipped cases: the baseline passes too few of its instances for a
// cache to lose any (a family the model cannot do is no evidence for or against the cache).
void NoSignalCases(const AcceptancePolicy& policy, ProbeFamily f, const PooledFamilyRow& row, ConfigVerdict* v) {
  const std::string family = FamilyName(f);
  const double rate = static_cast<double>(row.baseline_pass) / row.n, floor = policy.BaselinePassMin(f);
  std::vector<std::string> criteria;
  if (policy.family(f) && policy.family(f)->cache_induced_rate_max) criteria.push_back(".cache_induced_rate_max");
  if (policy.FailsOnSignificant(f)) criteria.push_back(".fail_on_significant");
  if (policy.relative_to) criteria.push_back(".relative_to");
  for (const std::string& criterion : criteria) {
    GateCase c = Case(family + criterion, "family " + family, 0, 0, family, "baseline pass rate", rate, floor);
    c.pass = true, c.outcome = CaseOutcome::kNoSignal;
    c.text = "no signal: the baseline passes " + std::to_string(row.baseline_pass) + " of " + std::to_string(row.n) +
             " " + family + " instances (" + GateNumber(rate) + " < baseline_pass_min " + GateNumber(floor) +
             "), so the cache cannot be judged on them";
    c.detail = c.text;
    v->cases.push_back(std::move(c));
  }
  v->no_signal.push_back(family + ": the baseline passes " + std::to_string(row.baseline_pass) + " of " +
                         std::to_string(row.n));
}

// "; cannot be significant: ..." when no outcome of these instances could reach alpha: the most
// a loss can show is every instance the baseline passes lost and none recovered, exact McNemar
// p = 2·0.5^k (before Holm), e.g. 0.0625 for 5 probes.
std::string UnreachableSignificance(const PooledFamilyRow& row, double alpha) {
  const double best = std::min(1.0, 2 * std::pow(0.5, row.baseline_pass));
  if (best < alpha) return "";
  return "; cannot be significant: with " + std::to_string(row.baseline_pass) +
         " instances the baseline passes, the smallest possible p is " + GateNumber(best) + " >= alpha " +
         GateNumber(alpha);
}

// The family's cache-induced rate against the upper end of the reference's exact interval (its
// rows come from the same probe instances, so the counts are of the same n).
void RelativeRateCase(const AcceptancePolicy& policy, const std::string& family, const PooledFamilyRow& row,
                      const PooledFamilyRow& ref_row, const std::string& ref_spec, bool is_ref, ConfigVerdict* v) {
  const Interval ref = ClopperPearson95(ref_row.cache_induced, ref_row.n);
  GateCase c = Case(family + ".relative_to", "family " + family, 0, 0, family, "cache-induced rate",
                    static_cast<double>(row.cache_induced) / row.n, ref.hi);
  c.interval = ClopperPearson95(row.cache_induced, row.n);
  Settle(c, false, policy);
  const std::string against = is_ref ? "; the reference itself"
                                     : "; " + ref_spec + ": " + std::to_string(ref_row.cache_induced) + " of " +
                                           std::to_string(ref_row.n) + " [" + GateNumber(ref.lo) + ", " +
                                           GateNumber(ref.hi) + "], the upper end";
  const char* more = c.outcome == CaseOutcome::kInconclusive ? "; more instances would narrow both intervals" : "";
  Describe(c, false,
           std::to_string(row.cache_induced) + " cache-induced failures in " + std::to_string(row.n) +
               " pooled instances" + against + more);
  v->cases.push_back(std::move(c));
}

// ref_row: the reference's row of the family under relative_to, else null.
void CheckedFamilyCases(const AcceptancePolicy& policy, ProbeFamily f, const PooledFamilyRow& row, double alpha,
                        const PooledFamilyRow* ref_row, const std::string& ref_spec, bool is_ref, ConfigVerdict* v) {
  if (static_cast<double>(row.baseline_pass) < policy.BaselinePassMin(f) * row.n)
    return NoSignalCases(policy, f, row, v);
  const std::string family = FamilyName(f);
  const std::string counts = std::to_string(row.cache_induced) + " cache-induced failures, " +
                             std::to_string(row.recovered) + " recoveries in " + std::to_string(row.n) +
                             " pooled instances";
  if (const auto& max = policy.family(f) ? policy.family(f)->cache_induced_rate_max : std::nullopt) {
    GateCase c = Case(family + ".cache_induced_rate_max", "family " + family, 0, 0, family, "cache-induced rate",
                      static_cast<double>(row.cache_induced) / row.n, *max);
    JudgeRate(c, row.cache_induced, row.n, policy, counts);
    v->cases.push_back(std::move(c));
  }
  if (policy.FailsOnSignificant(f)) {
    // Only a significant loss fails: more recoveries than failures is a difference toward the cache.
    GateCase c = Case(family + ".fail_on_significant", "family " + family, 0, 0, family, "Holm-adjusted McNemar p",
                      row.p_holm, alpha);
    c.pass = !(row.significant && row.cache_induced > row.recovered);
    c.outcome = c.pass ? CaseOutcome::kPass : CaseOutcome::kFail;
    const char* verdict = !row.significant ? "not significant"
                          : c.pass         ? "significant, toward the configuration"
                                           : "significant cache-induced loss";
    c.detail = verdict + ("; " + counts) + UnreachableSignificance(row, alpha);
    c.text = c.measure + " " + GateNumber(c.measured) + (row.significant ? " < " : " >= ") + GateNumber(alpha) + " (" +
             c.criterion + "), " + c.scope + ": " + c.detail;
    v->cases.push_back(std::move(c));
  }
  if (ref_row) RelativeRateCase(policy, family, row, *ref_row, ref_spec, is_ref, v);
}

void VarianceCase(const AcceptancePolicy& policy, const ProbeConfigResult& p, ConfigVerdict* v) {
  const int differ = p.variance_pairs - p.variance_identical;
  GateCase c = Case("variance.same_seed_divergence_max", "family variance", 0, 0, "variance", "same-seed divergence",
                    p.variance_pairs > 0 ? static_cast<double>(differ) / p.variance_pairs : 0.0,
                    *policy.family(ProbeFamily::kVariance)->same_seed_divergence_max);
  JudgeRate(c, differ, p.variance_pairs, policy,
            std::to_string(differ) + " of " + std::to_string(p.variance_pairs) +
                " same-seed sample pairs differ from the baseline's");
  v->cases.push_back(std::move(c));
}

void DriftCase(const AcceptancePolicy& policy, const ProbeConfigResult& p, ConfigVerdict* v) {
  const auto worst = std::max_element(p.drift_kl_mean.begin(), p.drift_kl_mean.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  GateCase c = Case("drift.kl_mean_max", "family drift", 0, 0, "drift", "drift kl_mean", worst->second,
                    *policy.family(ProbeFamily::kDrift)->kl_mean_max);
  // One mean KL per length along the base path, without a per-sample spread in probe's results:
  // judged as measured (docs/decision.md "Three outcomes").
  Settle(c, false, policy);
  Describe(
      c, false,
      "the worst of " + std::to_string(p.drift_kl_mean.size()) + " lengths, at length " + std::to_string(worst->first));
  v->cases.push_back(std::move(c));
}

// The team's own probes, one by one, whatever else the policy says about the custom family: a
// probe the baseline passes and the configuration fails is named (lost_custom_probes) and is a
// FAIL case under probes.custom.per_probe = "fail", a WARN case otherwise; none lost is one PASS
// case, so CI lists the rule as checked.
void CustomProbeCases(const AcceptancePolicy& policy, const ProbeConfigResult& p, ConfigVerdict* v) {
  int judged = 0;
  for (const CustomProbeOutcome& o : p.custom) {
    if (!o.baseline_pass) continue;
    ++judged;
    if (o.pass) continue;
    const std::string name = o.id + " (" + std::to_string(o.tokens) + " tokens)";
    GateCase c = Case("custom.per_probe", "probe " + o.id, 0, 0, "custom", "lost under the configuration", 1, 0);
    c.outcome = policy.LostCustomProbeFails() ? CaseOutcome::kFail : CaseOutcome::kWarn;
    c.pass = c.outcome == CaseOutcome::kWarn;
    c.detail = "passes at baseline and fails under the configuration";
    c.text = "custom probe " + name + " " + c.detail + " (custom.per_probe)";
    v->cases.push_back(std::move(c));
    v->lost_custom_probes.push_back(name);
  }
  if (judged == 0 || !v->lost_custom_probes.empty()) return;
  GateCase c = Case("custom.per_probe", "family custom", 0, 0, "custom", "custom probes lost", 0, 0);
  c.outcome = CaseOutcome::kPass, c.pass = true;
  c.detail =
      "every custom probe the baseline passes passes: " + std::to_string(judged) + " of " + std::to_string(judged);
  c.text = "custom probes lost 0 (custom.per_probe), family custom: " + c.detail;
  v->cases.push_back(std::move(c));
}

// The reference's pooled row of family f under relative_to (null without a reference); the
// reference must have probed the family on the same instances.
Expected<const PooledFamilyRow*> ReferenceRow(const AcceptancePolicy& policy, ProbeFamily f, const PooledFamilyRow& row,
                                              const ConfigInputs& in, const ConfigInputs* ref) {
  if (!ref) return static_cast<const PooledFamilyRow*>(nullptr);
  const PooledFamilyRow* found = nullptr;
  if (ref->probe) {
    for (const PooledFamilyRow& r : ref->probe->pooled) found = r.family == FamilyName(f) ? &r : found;
  }
  const std::string where = "relative_to = \"" + policy.relative_to->spec() + "\" (" + policy.relative_to_where + ")";
  if (!found) {
    return BadInput(where + ": the reference " + ref->spec + " has no " + FamilyName(f) + " results but " + in.spec +
                    " has; hint: " + MissingFamilyHint(f, ref->spec));
  }
  if (found->n != row.n) {
    return BadInput(where + ": the reference " + ref->spec + " has " + std::to_string(found->n) + " " + FamilyName(f) +
                    " instances, " + in.spec + " " + std::to_string(row.n) +
                    "; hint: probe them in one kvaudit probe run (the same instances)");
  }
  return found;
}

}  // namespace

// The families the policy judges, in canonical order; a required one that is missing is bad input.
Status ProbeCases(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref, ConfigVerdict* v) {
  std::vector<std::pair<std::string, std::string>> skipped;  // (why, families), in family order
  for (size_t i = 0; i < kNumProbeFamilies; ++i) {
    const auto f = static_cast<ProbeFamily>(i);
    if (policy.CriteriaOf(f) == 0) continue;
    const PooledFamilyRow* row = nullptr;
    if (in.probe && IsCheckedFamily(f)) {
      for (const PooledFamilyRow& r : in.probe->pooled) row = r.family == FamilyName(f) ? &r : row;
    }
    const bool present = in.probe && (IsCheckedFamily(f)            ? row != nullptr
                                      : f == ProbeFamily::kVariance ? in.probe->variance_rows > 0
                                                                    : !in.probe->drift_kl_mean.empty());
    if (!present) {
      const std::string where = in.probe ? "not in " + in.probe_file->path : "no probe results";
      if (policy.Required(f)) {
        return BadInput(std::string("the policy requires the probe family ") + FamilyName(f) + " but " + in.spec +
                        " has " + (in.probe ? "none in " + in.probe_file->path : "no probe results") +
                        "; hint: " + MissingFamilyHint(f, in.spec));
      }
      auto same = std::find_if(skipped.begin(), skipped.end(), [&](const auto& s) { return s.first == where; });
      if (same == skipped.end()) same = skipped.insert(skipped.end(), {where, ""});
      same->second += (same->second.empty() ? "" : ", ") + std::string(FamilyName(f));
      continue;
    }
    if (IsCheckedFamily(f)) {
      KV_ASSIGN_OR_RETURN(const PooledFamilyRow* ref_row, ReferenceRow(policy, f, *row, in, ref));
      CheckedFamilyCases(policy, f, *row, in.probe_file->alpha, ref_row, ref ? ref->spec : "", ref == &in, v);
    } else if (f == ProbeFamily::kVariance) {
      VarianceCase(policy, *in.probe, v);
    } else {
      DriftCase(policy, *in.probe, v);
    }
  }
  for (const auto& [why, families] : skipped) v->not_judged.push_back(families + ": " + why + " (not required)");
  if (in.probe) CustomProbeCases(policy, *in.probe, v);
  return Status::Ok();
}

}  // namespace kvaudit::gate_cases
