// Order statistics and the window bootstrap for mean-KLD confidence intervals.
// Positions inside one window share their context (a misquantized early key hurts every later
// query), so their KLDs are correlated; the bootstrap therefore resamples whole windows (the
// independent units) rather than positions — see docs/metrics.md.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kvaudit {

// Quantile of ascending `sorted` with linear interpolation at p·(N−1) (llama.cpp's percentiles;
// numpy's default). NaN for an empty vector.
double SortedQuantile(const std::vector<double>& sorted, double p);

struct Interval {
  double lo = 0, hi = 0;
};

// 95% percentile-bootstrap interval of the pooled mean Σsums/Σcounts, resampling windows with
// replacement. sums, counts: [n_windows] (a window's sum and number of positions). Deterministic
// for a seed on every platform (own splitmix64 generator, no std distributions). Replicates whose
// resampled windows hold no position are skipped; nullopt when nothing is left.
std::optional<Interval> BootstrapMeanCi(const std::vector<double>& sums, const std::vector<double>& counts,
                                        int replicates, uint64_t seed);

}  // namespace kvaudit
