// Shared by the searches of decide/search/mix_search.cc and decide/search/mix_first_last.cc (not a public API).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decide/search/mix_search.h"

namespace kvaudit::mix_detail {

// Costs of unreachable table entries start here; every reachable sum is below 2^53 in magnitude
// (decide/search/mix_problem.cc, QuantumFor), so anything above kReachable was never reached.
constexpr int64_t kInf = int64_t{1} << 62;
constexpr int64_t kReachable = int64_t{1} << 61;

struct Scored {
  uint64_t bytes = 0;
  int64_t cost = 0;             // units of MixProblem::quantum()
  std::vector<uint8_t> choice;  // [2 · n_layers]
};

// The front of a set of assignments: sorted by (bytes, cost, choice) and swept for strictly
// decreasing cost, so a tie keeps the lexicographically smallest choice vector.
MixFront FrontOf(const MixProblem& m, std::vector<Scored> points);

// The candidates every layer offers for one tensor, compared by canonical text, in layer 0's order.
struct CommonChoices {
  std::vector<std::string> text;            // [n_types]
  std::vector<std::vector<uint8_t>> index;  // [n_types][n_layers] the choice index of that text at each layer
};
CommonChoices CommonTo(const MixProblem& m, char tensor);
// The same over `layers` only (non-empty): index entries of the other layers are 0.
CommonChoices CommonTo(const MixProblem& m, char tensor, const std::vector<int>& layers);

MixFront FirstLastFront(const MixProblem& m);
MixFront ByKindFront(const MixProblem& m);  // empty unless some layers slide and some do not

}  // namespace kvaudit::mix_detail
