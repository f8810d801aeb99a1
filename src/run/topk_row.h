// One position's next-token distribution as a server reports it (docs/endpoints.md): the true (or
// forced) token's logprob and the k most likely tokens' logprobs, most likely first, ties to the
// lower id (vLLM's prompt_logprobs entry; kvaudit serve's). eval/topk_fidelity.h compares such
// rows; endpoint/remote_backend.h fetches them; eval/reference_file.h stores them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace kvaudit {

struct TopKRow {
  int32_t token = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;  // [<= k] (id, logprob)
};

// The k ids of the largest logits, largest first, ties to the lower id (the order Argmax uses).
std::vector<int32_t> TopIds(std::span<const float> logits, int k);

// The row of a full logit vector ([vocab]), as kvaudit serve answers prompt_logprobs: each
// logprob is logit − LogSumExp in double (run/log_softmax.h).
TopKRow TopKRowOf(std::span<const float> logits, int32_t token, int k);

}  // namespace kvaudit
