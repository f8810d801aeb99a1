#include "run/shard.h"

#include <algorithm>
#include <charconv>
#include <numeric>

namespace kvaudit {
namespace {

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Expected<ShardSpec> ParseShard(const std::string& text) {
  const size_t slash = text.find('/');
  ShardSpec s;
  if (slash == std::string::npos || !ParseInt(std::string_view(text).substr(0, slash), &s.index) ||
      !ParseInt(std::string_view(text).substr(slash + 1), &s.count) || s.count < 1 || s.index < 0 ||
      s.index >= s.count) {
    return BadInput("--shard " + text +
                    ": not a shard I/N with 0 <= I < N; hint: e.g. --shard 0/4 for the first of four");
  }
  return s;
}

std::vector<int> AssignShards(const std::vector<int64_t>& costs, int count) {
  std::vector<size_t> order(costs.size());  // units by descending cost, ties by index
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<int64_t> load(static_cast<size_t>(std::max(count, 1)), 0);  // [count]
  std::vector<int> shard(costs.size(), 0);                                // [n_units]
  for (size_t u : order) {
    // min_element returns the first minimum: ties go to the lower shard index.
    const size_t s = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shard[u] = static_cast<int>(s);
    load[s] += costs[u];
  }
  return shard;
}

std::vector<size_t> ShardUnits(const std::vector<int64_t>& costs, int index, int count) {
  const std::vector<int> shard = AssignShards(costs, count);
  std::vector<size_t> out;
  for (size_t u = 0; u < shard.size(); ++u) {
    if (shard[u] == index) out.push_back(u);
  }
  return out;
}

}  // namespace kvaudit
