// Order statistics and the window bootstrap for the intervals of eval's fidelity statistics.
// Positions inside one window share their context (a misquantized early key hurts every later
// query), so their values are correlated; the bootstrap therefore resamples whole windows (the
// independent units) rather than positions — see docs/metrics.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvaudit {

inline constexpr double kZ975 = 1.959963984540054;  // the standard normal's 97.5% quantile

// Quantile of ascending `sorted` with linear interpolation at p·(N−1) (llama.cpp's percentiles;
// numpy's default). NaN for an empty vector.
double SortedQuantile(const std::vector<double>& sorted, double p);

// The same quantile of unsorted `values`, which it reorders (nth_element: O(N), no full sort).
double UnsortedQuantile(std::vector<double>& values, double p);

struct Interval {
  double lo = 0, hi = 0;
};

// Uniform window indices for resampling: our own splitmix64 generator and multiply-shift (no std
// distributions), so every platform draws the same indices for a seed.
class WindowDraws {
 public:
  explicit WindowDraws(uint64_t seed) : state_(seed) {}
  size_t Next(size_t n);  // uniform in [0, n)

 private:
  uint64_t state_;
};

// The two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1).
double StudentT975(int df);

// The percentile levels of Hesterberg's expanded percentile interval for n resampled units
// (Hesterberg 2015, "What teachers should know about the bootstrap", §4.3): the plain percentile
// interval is too narrow for small n (it misses the n/(n−1) variance factor and t's tails); the
// expanded one uses the levels Φ(∓√(n/(n−1))·t_{n−1,0.975}) instead of 2.5%/97.5%. n < 2: {0, 1}.
Interval ExpandedPercentileLevels(int n);

}  // namespace kvaudit
