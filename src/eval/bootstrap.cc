#include "eval/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/status.h"

namespace kvaudit {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): tiny, portable, and good enough for resampling indices.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform index in [0, n) by multiply-shift (Lemire); the bias (n / 2^64) is far below noise.
size_t RandomIndex(uint64_t& state, size_t n) {
  return static_cast<size_t>((static_cast<unsigned __int128>(NextRandom(state)) * n) >> 64);
}

}  // namespace

double SortedQuantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double at = std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(at));
  if (i + 1 >= sorted.size()) return sorted.back();
  const double frac = at - static_cast<double>(i);
  return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

std::optional<Interval> BootstrapMeanCi(const std::vector<double>& sums, const std::vector<double>& counts,
                                        int replicates, uint64_t seed) {
  KV_CHECK(sums.size() == counts.size());
  const size_t n = sums.size();
  if (n == 0 || replicates <= 0) return std::nullopt;
  uint64_t state = seed;
  std::vector<double> means;  // [replicates]
  means.reserve(static_cast<size_t>(replicates));
  for (int r = 0; r < replicates; ++r) {
    double s = 0, c = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t w = RandomIndex(state, n);
      s += sums[w];
      c += counts[w];
    }
    if (c > 0) means.push_back(s / c);
  }
  if (means.empty()) return std::nullopt;
  std::sort(means.begin(), means.end());
  return Interval{SortedQuantile(means, 0.025), SortedQuantile(means, 0.975)};
}

}  // namespace kvaudit
