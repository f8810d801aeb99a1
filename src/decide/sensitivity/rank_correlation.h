// Rank statistics for comparing two orderings of the same items (sensitivity: the proxy's ranking
// of the cache parts against the end-to-end one, and one calibration set's against another's).
#pragma once

#include <optional>
#include <vector>

namespace kvaudit {

// Ranks 1..n of x in ascending order; tied values share the mean of the ranks they span
// (e.g. {5, 1, 5} -> {2.5, 1, 2.5}), the convention under which Spearman's rho is Pearson's
// correlation of the ranks.
std::vector<double> AverageRanks(const std::vector<double>& x);

// Spearman's rank correlation of a and b (same length): Pearson's r of their average ranks, in
// [-1, 1]. nullopt when it is undefined: fewer than 2 items, or either side all tied.
std::optional<double> Spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kvaudit
