// Per family × length bucket attribution of probe outcomes. Every probe instance yields
// a pair (baseline pass?, configuration pass?) from the same prompt, so the comparison is paired:
// the four cells of the 2×2 table, pass rates, and the exact McNemar test on the discordant cells.
// A cell's verdict is corrected for the other cells tested with it (significance.h).
// Definitions and wording: docs/probes.md "Attribution and statistics".
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace kvaudit {

struct ProbeOutcome {
  bool baseline_pass = false;
  bool config_pass = false;
};

struct ProbeAttribution {
  int64_t n = 0;
  double baseline_pass_rate = 0;  // fractions in 0..1; 0 when n = 0
  double config_pass_rate = 0;
  int64_t both_pass = 0;
  int64_t cache_induced = 0;    // baseline passes, configuration fails (McNemar's b)
  int64_t recovered = 0;        // baseline fails, configuration passes (McNemar's c)
  int64_t both_fail = 0;        // model-limit failures: not the cache's doing
  double mcnemar_p = 1.0;       // exact two-sided, on (cache_induced, recovered): this test alone
  double mcnemar_p_holm = 1.0;  // Holm-adjusted over its family of tests (HolmCorrect); = mcnemar_p alone
  bool significant = false;     // mcnemar_p_holm < alpha: the verdict that reports put in words
};

inline constexpr double kProbeAlpha = 0.05;

// The attribution of paired outcomes, as a test on its own (a family of one).
ProbeAttribution AttributeProbes(std::span<const ProbeOutcome> outcomes, double alpha = kProbeAlpha);
// The same from the four counts of the 2×2 table.
ProbeAttribution AttributionFromCounts(int64_t both_pass, int64_t cache_induced, int64_t recovered, int64_t both_fail,
                                       double alpha = kProbeAlpha);

// The verdict in words, from the corrected verdict: "no difference" (no discordant pair),
// "significant after correction" or "not significant".
const char* VerdictWords(const ProbeAttribution& a);

// One plain line for reports that says outright when a difference is not significant; the words
// follow the corrected verdict, e.g. "3 cache-induced failures, 0 recoveries: not significant
// (exact McNemar p = 0.25, Holm-adjusted p = 0.25 >= 0.05)".
std::string DescribeAttribution(const ProbeAttribution& a, double alpha = kProbeAlpha);

}  // namespace kvaudit
