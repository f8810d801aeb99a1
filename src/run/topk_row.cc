#include "run/topk_row.h"

#include <algorithm>

#include "run/log_softmax.h"

namespace kvaudit {

std::vector<int32_t> TopIds(std::span<const float> logits, int k) {
  std::vector<int32_t> ids(logits.size());  // [vocab], then the first k
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t n = std::min<size_t>(static_cast<size_t>(k), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
  ids.resize(n);
  return ids;
}

TopKRow TopKRowOf(std::span<const float> logits, int32_t token, int k) {
  const double lse = LogSumExp(logits);
  TopKRow r;
  r.token = token;
  r.logprob = -TokenNll(logits, lse, token);
  for (int32_t id : TopIds(logits, k)) r.top.emplace_back(id, -TokenNll(logits, lse, id));
  return r;
}

}  // namespace kvaudit
