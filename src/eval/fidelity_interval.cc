#include "eval/fidelity_interval.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {
namespace {

// [lo, hi] of a mean from n values with sum s and sum of squares sq, as if independent (normal).
Interval IndependentMean(double n, double s, double sq) {
  const double mean = s / n;
  const double var = n > 1 ? std::max(0.0, (sq - n * mean * mean) / (n - 1)) : 0.0;
  const double half = kZ975 * std::sqrt(var / n);
  return {mean - half, mean + half};
}

// Wilson's score interval of a proportion k/n (Wilson 1927): unlike the normal one it stays in
// [0, 1] and is not a point at k = 0 or n.
Interval Wilson(double k, double n) {
  const double p = k / n, z2 = kZ975 * kZ975;
  const double center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half = kZ975 / (1 + z2 / n) * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

// The distribution-free interval of a quantile of independent values: the order statistics at
// ranks n·p ∓ z·√(n·p·(1−p)) (the binomial count below the quantile, normal approximation).
Interval IndependentQuantile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size()), half = kZ975 * std::sqrt(n * p * (1 - p));
  const auto at = [&](double rank) {  // 1-based rank, clamped to the sample
    return values[static_cast<size_t>(std::clamp(rank, 1.0, n)) - 1];
  };
  return {at(std::floor(n * p - half)), at(std::ceil(n * p + half))};
}

Interval Hull(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

// Percentiles at the levels of the expanded interval, of replicate statistics.
Interval Percentiles(std::vector<double>& replicates, Interval levels) {
  std::sort(replicates.begin(), replicates.end());
  return {SortedQuantile(replicates, levels.lo), SortedQuantile(replicates, levels.hi)};
}

double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

void WindowTotals::Add(size_t window, double kld, bool agrees, double delta_nll) {
  KV_CHECK(window < count.size());
  count[window] += 1, kld_sum[window] += kld, top1[window] += agrees, dnll_sum[window] += delta_nll;
  kld_sq += kld * kld, dnll_sq += delta_nll * delta_nll;
}

bool WindowTotals::Merge(const WindowTotals& o) {
  if (o.count.size() != count.size()) return false;
  for (size_t w = 0; w < count.size(); ++w) {
    count[w] += o.count[w], kld_sum[w] += o.kld_sum[w], top1[w] += o.top1[w], dnll_sum[w] += o.dnll_sum[w];
  }
  kld_sq += o.kld_sq, dnll_sq += o.dnll_sq;
  return true;
}

int WindowTotals::windows() const {
  return static_cast<int>(std::count_if(count.begin(), count.end(), [](double c) { return c > 0; }));
}

FidelityIntervals IntervalsOf(const WindowTotals& t, int replicates, uint64_t seed, const KldByWindow* positions) {
  FidelityIntervals out;
  const double n = Sum(t.count);
  if (n <= 0) return out;
  std::vector<size_t> units;  // [windows()] the windows holding positions: the resampled units
  for (size_t w = 0; w < t.count.size(); ++w) {
    if (t.count[w] > 0) units.push_back(w);
  }
  const double kld_mean = Sum(t.kld_sum) / n;
  Interval kld = IndependentMean(n, Sum(t.kld_sum), t.kld_sq), agree = Wilson(Sum(t.top1), n);
  Interval dnll = IndependentMean(n, Sum(t.dnll_sum), t.dnll_sq);
  std::optional<Interval> p99;
  if (positions) p99 = IndependentQuantile(*positions->kld, 0.99);
  if (units.size() >= 2 && replicates > 0) {
    WindowDraws draws(seed);
    std::vector<double> mean, top1, delta, q99, pool;  // [replicates]; pool: [positions drawn]
    for (int r = 0; r < replicates; ++r) {
      double s = 0, c = 0, a = 0, d = 0;
      pool.clear();
      for (size_t k = 0; k < units.size(); ++k) {
        const size_t w = units[draws.Next(units.size())];
        s += t.kld_sum[w], c += t.count[w], a += t.top1[w], d += t.dnll_sum[w];
        if (!positions) continue;
        const auto first = positions->kld->begin() + static_cast<std::ptrdiff_t>((*positions->first)[w]);
        pool.insert(pool.end(), first, first + static_cast<std::ptrdiff_t>(t.count[w]));
      }
      mean.push_back(s / c), top1.push_back(a / c), delta.push_back(d / c);
      if (positions) q99.push_back(UnsortedQuantile(pool, 0.99));
    }
    const Interval levels = ExpandedPercentileLevels(static_cast<int>(units.size()));
    kld = Hull(kld, Percentiles(mean, levels));
    agree = Hull(agree, Percentiles(top1, levels));
    dnll = Hull(dnll, Percentiles(delta, levels));
    if (positions) p99 = Hull(*p99, Percentiles(q99, levels));
  }
  if (kld_mean >= 0) kld.lo = std::max(kld.lo, 0.0);  // KLD is >= 0; the normal part need not be
  out.kld_mean = kld, out.top1_agree = agree, out.kld_p99 = p99;
  out.ppl_ratio = Interval{std::exp(dnll.lo), std::exp(dnll.hi)};
  return out;
}

}  // namespace kvaudit
