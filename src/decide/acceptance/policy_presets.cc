#include "decide/acceptance/policy_presets.h"

namespace kvaudit {
namespace {

// The thresholds and why: docs/decision.md "Acceptance policy" (measured on the bundled model:
// eval over 8 windows of 4096 tokens of data/eval-docs.jsonl, the default probe run).
//
// strict: code, retrieval, agents. q8_0-class error only; no answer the full-precision cache gets
// right may be lost to the cache.
constexpr std::string_view kStrict = R"toml(# kvaudit preset "strict" (docs/decision.md "Acceptance policy")
inconclusive = "fail"

[fidelity]
kld_mean_max = 0.002
kld_p99_max = 0.02
top1_agree_min = 0.975
ppl_ratio_max = 1.005
min_bucket_tokens = 100

[probes]
fail_on_significant = true
baseline_pass_min = 0.5

[probes.needle]
required = true
cache_induced_rate_max = 0.0

[probes.exact]
cache_induced_rate_max = 0.0

[probes.constraint]
cache_induced_rate_max = 0.0

[probes.custom]
cache_induced_rate_max = 0.0
per_probe = "fail"

[probes.drift]
required = true
kl_mean_max = 0.005
)toml";

// balanced: chat. The 5-bit class and 8-bit K with 4-bit V pass; the 4-bit block formats and
// 2-bit KIVI, and any significant loss of planted facts, do not.
constexpr std::string_view kBalanced = R"toml(# kvaudit preset "balanced" (docs/decision.md "Acceptance policy")
inconclusive = "warn"

[fidelity]
kld_mean_max = 0.03
kld_p99_max = 0.25
top1_agree_min = 0.90
ppl_ratio_max = 1.04
min_bucket_tokens = 100

[probes]
fail_on_significant = true
baseline_pass_min = 0.5

[probes.needle]
required = true
cache_induced_rate_max = 0.1

[probes.custom]
per_probe = "warn"

[probes.drift]
required = true
kl_mean_max = 0.05
)toml";

// relative: no absolute number. Every fidelity statistic in every bucket and the needle rate must
// be no worse than llama.cpp's q8_0 cache on this model and data, within the q8_0 cache's own
// interval (under a target, as the target's engine runs it); an undecided case passes with a
// warning, since a cache on par with q8_0 often straddles the far end of q8_0's interval.
constexpr std::string_view kRelative = R"toml(# kvaudit preset "relative" (docs/decision.md "Relative to a reference")
relative_to = "k=q8_0,v=q8_0"
inconclusive = "warn"

[fidelity]
min_bucket_tokens = 100

[probes]
fail_on_significant = true
baseline_pass_min = 0.5

[probes.needle]
required = true

[probes.custom]
per_probe = "warn"
)toml";

}  // namespace

std::optional<std::string_view> PresetText(std::string_view name) {
  if (name == "strict") return kStrict;
  if (name == "balanced") return kBalanced;
  if (name == "relative") return kRelative;
  return std::nullopt;
}

const std::vector<std::string>& PresetNames() {
  static const std::vector<std::string> names = {"strict", "balanced", "relative"};
  return names;
}

}  // namespace kvaudit
