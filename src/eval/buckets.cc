#include "eval/buckets.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace kvaudit {

std::vector<Bucket> DefaultBuckets(int ctx) {
  std::vector<Bucket> out;
  // to grows as 16·2^k; int64 so a huge ctx cannot overflow the doubling.
  int64_t from = 1, to = 16;
  while (from <= ctx) {
    out.push_back({static_cast<int>(from), static_cast<int>(std::min<int64_t>(to, ctx))});
    from = to + 1;
    to *= 2;
  }
  return out;
}

Expected<std::vector<Bucket>> ParseBuckets(const std::string& spec, int ctx) {
  std::vector<Bucket> out;
  const std::string hint = "; hint: --buckets takes ascending upper edges, e.g. 16,64,256,1024";
  int from = 1;
  size_t i = 0;
  while (i <= spec.size()) {
    size_t j = spec.find(',', i);
    if (j == std::string::npos) j = spec.size();
    const std::string word = spec.substr(i, j - i);
    int edge = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), edge);
    if (word.empty() || ec != std::errc() || end != word.data() + word.size()) {
      return BadInput("--buckets '" + spec + "': '" + word + "' is not an integer" + hint);
    }
    if (edge < from) return BadInput("--buckets '" + spec + "': edge " + word + " is not ascending (or < 1)" + hint);
    if (edge > ctx) {
      return BadInput("--buckets '" + spec + "': edge " + word + " exceeds --ctx " + std::to_string(ctx) + hint);
    }
    out.push_back({from, edge});
    from = edge + 1;
    i = j + 1;
  }
  if (from <= ctx) out.push_back({from, ctx});
  return out;
}

int BucketIndex(const std::vector<Bucket>& buckets, int len) {
  // Buckets are contiguous and ascending: binary search on the upper edge.
  auto it = std::lower_bound(buckets.begin(), buckets.end(), len, [](const Bucket& b, int v) { return b.to < v; });
  if (it == buckets.end() || it->from > len) return -1;
  return static_cast<int>(it - buckets.begin());
}

}  // namespace kvaudit
