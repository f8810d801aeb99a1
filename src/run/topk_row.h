// One position's next-token distribution as a server reports it (docs/endpoints.md): the true (or
// forced) token's logprob and the k most likely tokens' logprobs, most likely first, ties to the
// lower id (vLLM's prompt_logprobs entry; kvaudit serve's). eval/topk_fidelity.h compares such
// rows; endpoint/remote_backend.h fetches them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace kvaudit {

struct TopKRow {
  int32_t token = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;  // [<= k] (id, logprob)
};

}  // namespace kvaudit
