// Token-sequence measures for the variance and drift probes (docs/probes.md): where two generations
// part, how far apart they are, and how repetitive one is. Plain functions on token ids.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace kvaudit {

// Index of the first differing token; nullopt when one is a prefix of the other and they have the
// same length (identical). A strict prefix diverges at the shorter length.
std::optional<int> FirstDivergence(std::span<const int32_t> a, std::span<const int32_t> b);

// Levenshtein distance over tokens (insert, delete, substitute: cost 1 each).
int TokenEditDistance(std::span<const int32_t> a, std::span<const int32_t> b);

// Share of the sequence's n-grams that already occurred earlier in it (0 when it has no n-gram):
// repeated n-grams / all n-grams. A degraded cache often makes output loop while it stays fluent.
double RepeatedNgramShare(std::span<const int32_t> ids, int n = 4);

// Mean pairwise token edit distance over all pairs of a set (0 with fewer than two members).
double MeanPairwiseEditDistance(const std::vector<std::vector<int32_t>>& set);

// Number of distinct sequences in a set.
int DistinctCount(const std::vector<std::vector<int32_t>>& set);

}  // namespace kvaudit
