// Aggregates of per-position fidelity (fidelity_metrics.h): overall, per context bucket, per token
// class, and the safe context length. Definitions and caveats: docs/metrics.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/bootstrap.h"
#include "eval/buckets.h"
#include "eval/fidelity_interval.h"
#include "eval/fidelity_metrics.h"
#include "eval/token_classes.h"

namespace kvaudit {

struct BootstrapOptions {
  int replicates = 1000;
  uint64_t seed = 1;
};

struct FidelitySummary {
  int64_t tokens = 0;
  int windows = 0;  // windows holding these positions: the units of the intervals
  double kld_mean = 0;
  // 95% intervals (eval/fidelity_interval.h); kld_p99_ci95 only for buckets (the gate judges those).
  std::optional<Interval> kld_ci95, kld_p99_ci95, top1_agree_ci95, ppl_ratio_ci95;
  WindowTotals totals;  // the sums by window the intervals came from (the gate pools buckets with them)
  double kld_median = 0, kld_p90 = 0, kld_p99 = 0, kld_p999 = 0, kld_max = 0;
  double top1_agree = 0, top5_drop = 0;  // fractions in 0..1
  double nll_base_mean = 0, nll_mean = 0;
  double ppl_base = 0, ppl = 0, ppl_ratio = 0, delta_ppl = 0;  // ppl_ratio = exp(mean ΔNLL)
  double dp_mean = 0, dp_p01 = 0, dp_p99 = 0, dp_rms = 0;
};

// Collects one configuration's positions over some selection (overall, one bucket).
class FidelityCollector {
 public:
  explicit FidelityCollector(size_t n_windows) : totals_(n_windows), first_(n_windows, 0) {}
  // Positions come window by window, in ascending window order (slot).
  void Add(size_t slot, double kld, double nll_base, double nll, double dp, bool top1, bool top5_drop);
  FidelitySummary Summarize(const BootstrapOptions& bootstrap, bool with_p99_interval) const;

 private:
  WindowTotals totals_;
  std::vector<double> kld_, dp_;  // [positions] kept for exact order statistics, window by window
  std::vector<size_t> first_;     // [n_windows] index in kld_ of each window's first position
  size_t last_slot_ = 0;
  double nll_base_sum_ = 0, nll_sum_ = 0, dp_sq_sum_ = 0;
  int64_t top1_ = 0, top5_drop_ = 0;
};

struct ClassSummary {
  std::string name;
  int64_t tokens = 0;
  double kld_mean = 0, top1_agree = 0;
};

// Where the configuration meets the KLD criterion (docs/metrics.md "Safe context length").
struct SafeRange {
  std::optional<int> up_to;      // largest measured context length of the safe prefix; nullopt: none
  bool is_all_measured = false;  // the criterion holds in every measured bucket (up_to = the largest measured)
};

struct ConfigSummary {
  FidelitySummary overall;
  std::vector<FidelitySummary> buckets;  // [n_buckets], matching AggregateOptions::buckets
  std::vector<int> bucket_last_len;      // [n_buckets] largest context length with data (0: none)
  std::vector<ClassSummary> classes;     // the five text classes, then "rare" (overlaps them)
  SafeRange safe;                        // by the buckets' mean KLD against kld_threshold
};

struct AggregateOptions {
  std::vector<Bucket> buckets;
  const std::vector<TokenClass>* classes = nullptr;  // [vocab]; null: no class table
  const std::vector<uint8_t>* rare = nullptr;        // [vocab]; null: no rare class
  double kld_threshold = 0.01;
  BootstrapOptions bootstrap;
};

// windows must be in ascending window order (sums are order-dependent in floating point, and a
// resumed run must reproduce a fresh one bit for bit).
ConfigSummary SummarizeConfig(const std::vector<WindowRecord>& windows, size_t config, const AggregateOptions& options);

// One measured context bucket (holding scored positions) for SafeUpTo, ascending by length.
struct BucketKld {
  int last_len = 0;  // the largest context length measured in the bucket (≤ its upper edge)
  double kld_mean = 0;
};

// The safe prefix of a bucket series: the criterion is mean KLD ≤ threshold, and it must hold
// in every measured bucket from the first one on. up_to = last_len of the last bucket of that
// prefix; nullopt when the first bucket already fails. A bucket that is back under the threshold
// after a failing one does not extend the range: a cache that fails at a shorter context is not
// called safe at a longer one.
SafeRange SafeUpTo(const std::vector<BucketKld>& buckets, double threshold);

}  // namespace kvaudit
