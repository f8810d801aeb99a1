#include "probe/sequences.h"

#include <algorithm>
#include <set>

namespace kvaudit {

std::optional<int> FirstDivergence(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<int>(i);
  }
  if (a.size() == b.size()) return std::nullopt;
  return static_cast<int>(n);
}

int TokenEditDistance(std::span<const int32_t> a, std::span<const int32_t> b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);  // [|b| + 1] one row of the DP table
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

double RepeatedNgramShare(std::span<const int32_t> ids, int n) {
  if (n <= 0 || ids.size() < static_cast<size_t>(n)) return 0.0;
  std::set<std::vector<int32_t>> seen;
  const size_t total = ids.size() - static_cast<size_t>(n) + 1;
  size_t repeated = 0;
  for (size_t i = 0; i < total; ++i) {
    if (!seen.emplace(ids.begin() + static_cast<std::ptrdiff_t>(i), ids.begin() + static_cast<std::ptrdiff_t>(i + n))
             .second) {
      ++repeated;
    }
  }
  return static_cast<double>(repeated) / static_cast<double>(total);
}

double MeanPairwiseEditDistance(const std::vector<std::vector<int32_t>>& set) {
  if (set.size() < 2) return 0.0;
  double sum = 0;
  int pairs = 0;
  for (size_t i = 0; i < set.size(); ++i) {
    for (size_t j = i + 1; j < set.size(); ++j) sum += TokenEditDistance(set[i], set[j]), ++pairs;
  }
  return sum / pairs;
}

int DistinctCount(const std::vector<std::vector<int32_t>>& set) {
  return static_cast<int>(std::set<std::vector<int32_t>>(set.begin(), set.end()).size());
}

}  // namespace kvaudit
