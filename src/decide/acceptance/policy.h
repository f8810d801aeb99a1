// The acceptance policy (docs/decision.md "Acceptance policy"): what "safe" means for a
// KV-cache configuration, as thresholds on eval's per-bucket fidelity and on probe's per-family
// results. Written by hand in TOML, or one of the built-in presets (decide/acceptance/policy_presets.h), which
// a file may extend. Every problem in a policy is one BadInput line naming the key and its position
// (file:line:col), with a hint.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/config/cache_config.h"

namespace kvaudit {

// The fidelity criteria, in the order the gate checks and reports them. Each reads one key of
// eval's results.json buckets[] (docs/results-schema.md).
enum class FidelityMetric { kKldMean, kKldP99, kTop1Agree, kPplRatio };
inline constexpr size_t kNumFidelityMetrics = 4;

struct FidelityMetricInfo {
  const char* key;       // in the policy: "kld_mean_max"
  const char* field;     // in eval's results.json buckets[]: "kld_mean"
  const char* ci_field;  // its 95% interval there: "kld_ci95"
  bool is_min;           // the measured value must be >= the threshold (else <=)
  const char* unit;      // for messages: "nats", "fraction", "ratio"
};
const FidelityMetricInfo& Info(FidelityMetric m);

// One optional threshold per fidelity metric.
struct FidelityLimits {
  std::array<std::optional<double>, kNumFidelityMetrics> limit;
  std::optional<double>& operator[](FidelityMetric m) { return limit[static_cast<size_t>(m)]; }
  const std::optional<double>& operator[](FidelityMetric m) const { return limit[static_cast<size_t>(m)]; }
  bool any() const;
};

// [[fidelity.range]]: other thresholds for the buckets that overlap [from, to] (inclusive).
struct FidelityRange {
  int from = 0, to = 0;
  FidelityLimits limits;  // unset ones fall back to [fidelity]'s
  std::string where;      // "policy.toml:12:1" of its header, for messages
};

// The probe families in their canonical order (probe --family); the first four are the checked
// families with a pooled McNemar test in probe's results.json, variance and drift have their own rows.
enum class ProbeFamily { kNeedle, kExact, kConstraint, kCustom, kVariance, kDrift };
inline constexpr size_t kNumProbeFamilies = 6;
const char* FamilyName(ProbeFamily f);
inline bool IsCheckedFamily(ProbeFamily f) { return f <= ProbeFamily::kCustom; }

// A family that the model passes less than half the time with the full-precision cache tells
// nothing about the cache (docs/decision.md "No signal").
inline constexpr double kDefaultBaselinePassMin = 0.5;

// What a case the policy does not settle does to its configuration: fail it, or pass it with a
// warning. Used for INCONCLUSIVE cases (docs/decision.md "Three outcomes") and custom probes lost
// under the configuration ("The team's probes").
enum class Disposition { kFail, kWarn };

struct FamilyPolicy {
  std::optional<bool> required;                    // absent from the results: bad input, not a pass
  std::optional<double> cache_induced_rate_max;    // checked families: pooled cache_induced / n
  std::optional<bool> fail_on_significant;         // checked families; unset: [probes]'s
  std::optional<double> same_seed_divergence_max;  // variance: share of same-seed pairs that differ
  std::optional<double> kl_mean_max;               // drift: worst length's mean KL along the base path
  std::optional<double> baseline_pass_min;         // checked families; unset: [probes]'s
  std::optional<Disposition> per_probe;            // custom: a probe passing at baseline, failing under the cache
  std::string where;                               // its table's position
};

struct AcceptancePolicy {
  std::string name;     // the preset's name or the file's path, as given
  std::string text;     // the TOML it was parsed from (a preset's or the file's): audit records it
  std::string extends;  // the preset a file started from ("" = none)
  std::string extends_where;
  std::optional<int> target_context;
  std::string target_context_where;
  std::optional<Disposition> inconclusive;  // unset: fail
  // relative_to: a reference configuration in the same results (e.g. k=q8_0,v=q8_0). Each fidelity
  // statistic of every judged bucket, and each checked family's cache-induced rate, must also be no
  // worse than the far end of the reference's 95% interval there (docs/decision.md "Relative to a
  // reference"). Unset: thresholds only.
  std::optional<CacheConfig> relative_to;
  std::string relative_to_where;
  FidelityLimits fidelity;
  std::vector<FidelityRange> ranges;  // ascending and disjoint
  // A judged bucket with fewer scored tokens is bad input: its statistics move by whole tokens
  // (one top-1 flip in 32 tokens is 3 %), too coarse to pass or fail a cache on.
  std::optional<int> min_bucket_tokens;
  std::optional<double> alpha;              // must equal the probe run's
  std::optional<bool> fail_on_significant;  // default of the checked families
  // A checked family whose pooled baseline pass rate is below this gives no signal: the model fails
  // it with the full-precision cache, so a cache cannot lose it. Its criteria are skipped, not
  // passed (docs/decision.md "No signal"). Default of the checked families; unset: 0.5.
  std::optional<double> baseline_pass_min;
  std::array<std::optional<FamilyPolicy>, kNumProbeFamilies> families;

  const std::optional<FamilyPolicy>& family(ProbeFamily f) const { return families[static_cast<size_t>(f)]; }
  bool InconclusiveFails() const { return inconclusive.value_or(Disposition::kFail) == Disposition::kFail; }
  // Whether a custom probe that passes at baseline and fails under a configuration fails it
  // (probes.custom.per_probe = "fail"); else it is a named warning, never silent.
  bool LostCustomProbeFails() const;
  bool Required(ProbeFamily f) const;
  // Whether a significant pooled difference fails the family (its own setting, else [probes]'s).
  bool FailsOnSignificant(ProbeFamily f) const;
  // The baseline pass rate below which the family gives no signal (its own, else [probes]'s, else
  // kDefaultBaselinePassMin).
  double BaselinePassMin(ProbeFamily f) const;
  // The number of criteria the family is judged by (0: the policy says nothing about it); relative_to
  // is one more for each checked family.
  int CriteriaOf(ProbeFamily f) const;
  // The thresholds for a bucket [from, to]: the strictest of [fidelity] and every range it overlaps.
  FidelityLimits LimitsFor(int from, int to) const;
};

// Parses policy text (TOML); `source` names it in messages ("policy.toml", "preset strict").
// A file's `extends` is resolved against the presets; presets themselves extend nothing.
Expected<AcceptancePolicy> ParsePolicy(std::string_view text, const std::string& source);
// --policy: a preset name (strict, balanced, relative) or the path of a TOML file.
Expected<AcceptancePolicy> LoadPolicy(const std::string& name_or_path);

}  // namespace kvaudit
