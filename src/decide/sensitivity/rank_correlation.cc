#include "decide/sensitivity/rank_correlation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/status.h"

namespace kvaudit {

std::vector<double> AverageRanks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    // Positions i..j (0-based) hold ranks i+1..j+1: their mean is (i + j) / 2 + 1.
    const double mean = 0.5 * static_cast<double>(i + j) + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = mean;
    i = j + 1;
  }
  return ranks;
}

std::optional<double> Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  KV_CHECK(a.size() == b.size());
  const size_t n = a.size();
  if (n < 2) return std::nullopt;
  const std::vector<double> ra = AverageRanks(a), rb = AverageRanks(b);
  const double mean = 0.5 * static_cast<double>(n + 1);  // the mean of any n average ranks
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    const double da = ra[i] - mean, db = rb[i] - mean;
    sab += da * db, saa += da * da, sbb += db * db;
  }
  if (saa == 0 || sbb == 0) return std::nullopt;
  return std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
}

}  // namespace kvaudit
