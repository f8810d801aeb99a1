// Per-position fidelity of one cache configuration against the baseline: KL(base‖cfg)
// over the full vocabulary, top-1 agreement, NLL and probability of the true next token, and
// whether the baseline's top-1 fell out of the configuration's top-5. Everything accumulates in
// double; the baseline's log-softmax is computed once per row and shared by all configurations.
// Definitions: docs/metrics.md "Per position".
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eval/attention_stats.h"

namespace kvaudit {

struct PositionFidelity {
  double kld = 0;          // KL(base ‖ cfg) in nats; exactly 0 for bitwise-identical logits
  double nll = 0;          // −log p_cfg(true token)
  double dp = 0;           // p_cfg(true) − p_base(true)
  bool top1 = false;       // cfg argmax == base argmax (first index of the maximum, as llama.cpp)
  bool top5_drop = false;  // the base argmax ranks 6th or lower under cfg
};

// One baseline row, prepared once and compared against every configuration's row.
class BaseRow {
 public:
  // logits: [vocab]; true_token in [0, vocab).
  void Set(std::span<const float> logits, int32_t true_token);
  PositionFidelity Compare(std::span<const float> cfg_logits) const;

  double nll() const { return nll_; }
  int32_t argmax() const { return argmax_; }
  size_t vocab() const { return logp_.size(); }
  double logp(int32_t id) const { return logp_[static_cast<size_t>(id)]; }  // log p_base(id)

 private:
  std::vector<double> logp_;  // [vocab] log p_base
  std::vector<double> p_;     // [vocab] p_base (exp of logp_, kept so each config costs one exp per entry)
  int32_t argmax_ = 0, token_ = 0;
  double nll_ = 0, p_true_ = 0;
};

// The scored positions of one window, for every configuration: enough to rebuild every aggregate
// (it is what resume_log writes per window). Position of entry i: first_pos + i (0-based index of
// the predicting token inside the window; it predicts the token at first_pos + i + 1).
struct WindowRecord {
  int window = 0;
  int first_pos = 0;
  std::vector<int32_t> tokens;   // [n] true next tokens
  std::vector<double> nll_base;  // [n] −log p_base(true)
  struct Config {
    std::vector<double> kld, nll, dp;      // each [n]
    std::vector<uint8_t> top1, top5_drop;  // each [n], 0/1
  };
  std::vector<Config> configs;  // [n_configs]
  // Attention-level sums (attention_diag.h): [n_configs][n_layers, n_kv_heads, n_buckets]; empty
  // when the diagnosis is off.
  std::vector<std::vector<AttnCell>> attention;

  size_t size() const { return tokens.size(); }
};

}  // namespace kvaudit
