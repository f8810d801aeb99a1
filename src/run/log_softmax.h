// Numerically careful per-row quantities of a logit vector, accumulated in double.
#pragma once

#include <cstdint>
#include <span>

namespace kvaudit {

// log(sum(exp(logits))) with the max subtracted first.
double LogSumExp(std::span<const float> logits);
// -log softmax(logits)[token].
inline double TokenNll(std::span<const float> logits, double log_sum_exp, int32_t token) {
  return log_sum_exp - static_cast<double>(logits[static_cast<size_t>(token)]);
}

}  // namespace kvaudit
