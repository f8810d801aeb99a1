// The 95% intervals of the fidelity statistics the acceptance policy judges (mean KLD, KLD p99,
// top-1 agreement, PPL ratio), for one selection of positions (a context bucket, a pool of them,
// or all positions). Method (docs/metrics.md "Intervals"): the expanded percentile bootstrap over
// windows, widened where the interval for independent positions is wider — windows are the
// independent units, but with few windows their bootstrap alone is too narrow (one window: a point).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "eval/bootstrap.h"

namespace kvaudit {

// One selection's sums by window: what the intervals of its means need, small enough for
// results.json (the gate pools buckets by adding them).
struct WindowTotals {
  explicit WindowTotals(size_t n_windows = 0)
      : count(n_windows, 0.0), kld_sum(n_windows, 0.0), top1(n_windows, 0.0), dnll_sum(n_windows, 0.0) {}
  std::vector<double> count;       // [n_windows] positions
  std::vector<double> kld_sum;     // [n_windows] Σ KLD
  std::vector<double> top1;        // [n_windows] positions whose top-1 token agrees with the baseline's
  std::vector<double> dnll_sum;    // [n_windows] Σ (NLL_cfg − NLL_base)
  double kld_sq = 0, dnll_sq = 0;  // over all positions: for the independent-positions interval

  void Add(size_t window, double kld, bool agrees, double delta_nll);
  // The pool of two selections of the same windows (false when their window counts differ).
  bool Merge(const WindowTotals& other);
  int windows() const;  // windows holding at least one position
};

// The KLDs of a selection window by window, for the p99's interval: window w's are
// kld[first[w] .. first[w] + count[w]).
struct KldByWindow {
  const std::vector<double>* kld = nullptr;    // [positions]
  const std::vector<size_t>* first = nullptr;  // [n_windows]
};

struct FidelityIntervals {
  std::optional<Interval> kld_mean, kld_p99, top1_agree, ppl_ratio;  // nullopt: no positions (p99: not asked)
};

// Deterministic for a seed; every selection of a run uses the same seed, so configurations are
// compared on the same resamples. positions: null, or the KLDs for the p99's interval (replicates ×
// positions of work).
FidelityIntervals IntervalsOf(const WindowTotals& totals, int replicates, uint64_t seed, const KldByWindow* positions);

}  // namespace kvaudit
