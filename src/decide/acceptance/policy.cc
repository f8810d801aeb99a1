#include "decide/acceptance/policy.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/edit_distance.h"
#include "decide/acceptance/policy_presets.h"
#include "decide/acceptance/policy_text.h"
#include "decide/acceptance/policy_toml.h"

namespace kvaudit {
namespace {

constexpr FidelityMetricInfo kMetrics[kNumFidelityMetrics] = {
    {"kld_mean_max", "kld_mean", "kld_ci95", false, "nats"},
    {"kld_p99_max", "kld_p99", "kld_p99_ci95", false, "nats"},
    {"top1_agree_min", "top1_agree", "top1_agree_ci95", true, "fraction"},
    {"ppl_ratio_max", "ppl_ratio", "ppl_ratio_ci95", false, "ratio"},
};
constexpr const char* kFamilyNames[kNumProbeFamilies] = {"needle", "exact",    "constraint",
                                                         "custom", "variance", "drift"};
constexpr size_t kMaxPolicyBytes = 1 << 20;  // a hand-written policy is a few hundred bytes

template <class T>
void Override(std::optional<T>& base, const std::optional<T>& over) {
  if (over) base = over;
}

// A file's keys over its preset's: every key the file sets wins; ranges, when the file gives any,
// replace the preset's (a list is replaced, not merged, so a file reads as what it states).
AcceptancePolicy Overlay(AcceptancePolicy base, const AcceptancePolicy& file) {
  base.name = file.name, base.extends = file.extends, base.extends_where = file.extends_where;
  if (file.target_context)
    base.target_context = file.target_context, base.target_context_where = file.target_context_where;
  for (size_t m = 0; m < kNumFidelityMetrics; ++m) Override(base.fidelity.limit[m], file.fidelity.limit[m]);
  if (!file.ranges.empty()) base.ranges = file.ranges;
  Override(base.inconclusive, file.inconclusive);
  if (file.relative_to) base.relative_to = file.relative_to, base.relative_to_where = file.relative_to_where;
  Override(base.min_bucket_tokens, file.min_bucket_tokens);
  Override(base.alpha, file.alpha);
  Override(base.fail_on_significant, file.fail_on_significant);
  Override(base.baseline_pass_min, file.baseline_pass_min);
  for (size_t f = 0; f < kNumProbeFamilies; ++f) {
    const std::optional<FamilyPolicy>& over = file.families[f];
    if (!over) continue;
    std::optional<FamilyPolicy>& fam = base.families[f];
    if (!fam) fam = FamilyPolicy{};
    Override(fam->required, over->required);
    Override(fam->cache_induced_rate_max, over->cache_induced_rate_max);
    Override(fam->fail_on_significant, over->fail_on_significant);
    Override(fam->same_seed_divergence_max, over->same_seed_divergence_max);
    Override(fam->kl_mean_max, over->kl_mean_max);
    Override(fam->baseline_pass_min, over->baseline_pass_min);
    Override(fam->per_probe, over->per_probe);
    fam->where = over->where;
  }
  return base;
}

std::string RangeText(const FidelityRange& r) { return std::to_string(r.from) + ".." + std::to_string(r.to); }

Status CheckRanges(AcceptancePolicy& p) {
  std::sort(p.ranges.begin(), p.ranges.end(),
            [](const FidelityRange& a, const FidelityRange& b) { return a.from < b.from; });
  for (size_t i = 1; i < p.ranges.size(); ++i) {
    const FidelityRange &a = p.ranges[i - 1], &b = p.ranges[i];
    if (b.from > a.to) continue;
    return BadInput("fidelity ranges " + RangeText(a) + " and " + RangeText(b) + " overlap, " + a.where + " and " +
                    b.where + "; hint: ranges include both ends and may not share a context length");
  }
  for (const FidelityRange& r : p.ranges) {
    if (!p.target_context || r.from <= *p.target_context) continue;
    return BadInput("fidelity range " + RangeText(r) + " starts after target_context = " +
                    std::to_string(*p.target_context) + ", " + r.where + " (target_context: " + p.target_context_where +
                    "); hint: buckets beyond target_context are not judged: drop the range or raise target_context");
  }
  return Status::Ok();
}

Status CheckFamilies(const AcceptancePolicy& p) {
  for (size_t i = 0; i < kNumProbeFamilies; ++i) {
    const auto f = static_cast<ProbeFamily>(i);
    if (!p.Required(f) || p.CriteriaOf(f) > 0) continue;
    const char* what = f == ProbeFamily::kVariance ? "same_seed_divergence_max"
                       : f == ProbeFamily::kDrift  ? "kl_mean_max"
                                                   : "cache_induced_rate_max or fail_on_significant = true";
    return BadInput(std::string("probes.") + FamilyName(f) + ".required = true but the family has no criterion, " +
                    p.family(f)->where + "; hint: give " + what + ", or drop required");
  }
  return Status::Ok();
}

bool HasCriterion(const AcceptancePolicy& p) {
  if (p.fidelity.any() || p.relative_to) return true;
  if (std::any_of(p.ranges.begin(), p.ranges.end(), [](const FidelityRange& r) { return r.limits.any(); })) return true;
  for (size_t f = 0; f < kNumProbeFamilies; ++f) {
    if (p.CriteriaOf(static_cast<ProbeFamily>(f)) > 0) return true;
  }
  return false;
}

Status Validate(AcceptancePolicy& p) {
  if (!HasCriterion(p)) {
    return BadInput("the policy sets no criterion, " + p.name +
                    "; hint: give a threshold under [fidelity] or [probes.<family>], relative_to = \"k=q8_0,v=q8_0\", "
                    "or extends = \"balanced\" "
                    "(docs/decision.md \"Acceptance policy\")");
  }
  KV_RETURN_IF_ERROR(CheckRanges(p));
  return CheckFamilies(p);
}

// "did you mean strict?" for a near miss, else the list.
std::string PresetHint(const std::string& name) {
  for (const std::string& preset : PresetNames()) {
    if (EditDistance(name, preset) <= 2) return "did you mean " + preset + "?";
  }
  std::string list;
  for (const std::string& preset : PresetNames()) list += (list.empty() ? "" : ", ") + preset;
  return "the presets are " + list;
}

}  // namespace

const FidelityMetricInfo& Info(FidelityMetric m) { return kMetrics[static_cast<size_t>(m)]; }
const char* FamilyName(ProbeFamily f) { return kFamilyNames[static_cast<size_t>(f)]; }

bool FidelityLimits::any() const {
  return std::any_of(limit.begin(), limit.end(), [](const std::optional<double>& x) { return x.has_value(); });
}

bool AcceptancePolicy::Required(ProbeFamily f) const { return family(f) && family(f)->required.value_or(false); }

bool AcceptancePolicy::FailsOnSignificant(ProbeFamily f) const {
  if (!IsCheckedFamily(f)) return false;
  if (family(f) && family(f)->fail_on_significant) return *family(f)->fail_on_significant;
  return fail_on_significant.value_or(false);
}

double AcceptancePolicy::BaselinePassMin(ProbeFamily f) const {
  if (family(f) && family(f)->baseline_pass_min) return *family(f)->baseline_pass_min;
  return baseline_pass_min.value_or(kDefaultBaselinePassMin);
}

bool AcceptancePolicy::LostCustomProbeFails() const {
  const std::optional<FamilyPolicy>& fam = family(ProbeFamily::kCustom);
  return fam && fam->per_probe == Disposition::kFail;
}

int AcceptancePolicy::CriteriaOf(ProbeFamily f) const {
  const std::optional<FamilyPolicy>& fam = family(f);
  switch (f) {
    case ProbeFamily::kVariance: return fam && fam->same_seed_divergence_max ? 1 : 0;
    case ProbeFamily::kDrift: return fam && fam->kl_mean_max ? 1 : 0;
    default:
      return (fam && fam->cache_induced_rate_max ? 1 : 0) + (FailsOnSignificant(f) ? 1 : 0) +
             (fam && fam->per_probe ? 1 : 0) + (relative_to ? 1 : 0);
  }
}

// Each region the bucket touches (every range it overlaps, and the ranges' outside when part of the
// bucket lies there) brings its thresholds; the bucket must meet the strictest of them, because its
// statistic is one mean over all of its positions.
FidelityLimits AcceptancePolicy::LimitsFor(int from, int to) const {
  FidelityLimits out;
  auto take = [&out](const FidelityLimits& l) {
    for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
      if (!l.limit[m]) continue;
      const bool is_min = kMetrics[m].is_min;
      std::optional<double>& o = out.limit[m];
      o = !o ? *l.limit[m] : is_min ? std::max(*o, *l.limit[m]) : std::min(*o, *l.limit[m]);
    }
  };
  int64_t covered = 0;
  for (const FidelityRange& r : ranges) {
    if (r.to < from || r.from > to) continue;
    FidelityLimits l = fidelity;
    for (size_t m = 0; m < kNumFidelityMetrics; ++m) Override(l.limit[m], r.limits.limit[m]);
    take(l);
    covered += std::min(to, r.to) - std::max(from, r.from) + 1;
  }
  if (covered < static_cast<int64_t>(to) - from + 1) take(fidelity);
  return out;
}

namespace {

Expected<AcceptancePolicy> ParsePolicyText(std::string_view text, const std::string& source) {
  KV_ASSIGN_OR_RETURN(AcceptancePolicy file, ReadPolicyToml(text, source));
  AcceptancePolicy p = file;
  if (!file.extends.empty()) {
    const std::optional<std::string_view> preset = PresetText(file.extends);
    if (!preset) {
      return BadInput("extends = \"" + file.extends + "\" names no preset, " + file.extends_where +
                      "; hint: " + PresetHint(file.extends));
    }
    KV_ASSIGN_OR_RETURN(AcceptancePolicy base, ReadPolicyToml(*preset, "preset " + file.extends));
    KV_CHECK_MSG(base.extends.empty(), "a preset extends nothing");
    p = Overlay(std::move(base), file);
  }
  KV_RETURN_IF_ERROR(Validate(p));
  return p;
}

}  // namespace

Expected<AcceptancePolicy> ParsePolicy(std::string_view text, const std::string& source) {
  auto parsed = ParsePolicyText(text, source);
  if (!parsed.ok()) return BadInput(EscapeControlChars(parsed.error().message));  // keys and strings quoted as written
  parsed->text = std::string(text);
  return parsed;
}

Expected<AcceptancePolicy> LoadPolicy(const std::string& name_or_path) {
  if (const std::optional<std::string_view> preset = PresetText(name_or_path)) {
    KV_ASSIGN_OR_RETURN(AcceptancePolicy p, ParsePolicy(*preset, "preset " + name_or_path));
    p.name = name_or_path;
    return p;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name_or_path, ec)) {
    return BadInput("--policy " + name_or_path + " is neither a preset nor a file; hint: " + PresetHint(name_or_path) +
                    ", or give the path of a TOML policy");
  }
  std::ifstream in(name_or_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) return BadInput(name_or_path + ": cannot read the policy; hint: check its permissions");
  if (text.str().size() > kMaxPolicyBytes) {
    return BadInput(name_or_path + ": the policy is over 1 MiB; hint: a policy is a short hand-written TOML file");
  }
  return ParsePolicy(text.str(), name_or_path);
}

}  // namespace kvaudit
