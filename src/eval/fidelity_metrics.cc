#include "eval/fidelity_metrics.h"

#include <cmath>

#include "base/status.h"
#include "run/log_softmax.h"
#include "run/sampling.h"

namespace kvaudit {

void BaseRow::Set(std::span<const float> logits, int32_t true_token) {
  KV_CHECK(true_token >= 0 && static_cast<size_t>(true_token) < logits.size());
  const size_t n = logits.size();
  logp_.resize(n);
  p_.resize(n);
  const double lse = LogSumExp(logits);
  for (size_t i = 0; i < n; ++i) {
    // Same expression as in Compare, so identical logits give bitwise-identical log-probs (KLD 0).
    logp_[i] = static_cast<double>(logits[i]) - lse;
    p_[i] = std::exp(logp_[i]);
  }
  argmax_ = Argmax(logits);
  token_ = true_token;
  nll_ = -logp_[static_cast<size_t>(true_token)];
  p_true_ = p_[static_cast<size_t>(true_token)];
}

PositionFidelity BaseRow::Compare(std::span<const float> cfg) const {
  KV_CHECK(cfg.size() == logp_.size());
  const double lse = LogSumExp(cfg);
  PositionFidelity f;
  // Full vocabulary, no truncation: llama.cpp drops base log-probs below −16 (its 16-bit logits
  // file cannot store them); docs/metrics.md discusses the (tiny) difference.
  double kld = 0;
  for (size_t i = 0; i < cfg.size(); ++i) {
    if (p_[i] == 0) continue;  // exp underflow: the term is 0 whatever the config says
    kld += p_[i] * (logp_[i] - (static_cast<double>(cfg[i]) - lse));
  }
  f.kld = kld;
  f.nll = lse - static_cast<double>(cfg[static_cast<size_t>(token_)]);
  f.dp = std::exp(-f.nll) - p_true_;
  f.top1 = Argmax(cfg) == argmax_;
  // Rank of the base argmax under cfg, ties broken by index as Argmax does.
  const float a = cfg[static_cast<size_t>(argmax_)];
  int above = 0;
  for (size_t i = 0; i < cfg.size() && above < 5; ++i) {
    if (cfg[i] > a || (cfg[i] == a && static_cast<int32_t>(i) < argmax_)) ++above;
  }
  f.top5_drop = above >= 5;
  return f;
}

}  // namespace kvaudit
