#include "run/log_softmax.h"

#include <cmath>

namespace kvaudit {

double LogSumExp(std::span<const float> logits) {
  float max_logit = logits[0];
  for (float x : logits) max_logit = x > max_logit ? x : max_logit;
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max_logit);
  return max_logit + std::log(sum);
}

}  // namespace kvaudit
