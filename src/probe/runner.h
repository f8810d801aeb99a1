// Runs probe instances under the baseline and every configuration. Each instance is
// generated once per configuration from the same prompt ids with the same decoding, so any
// difference between a pair is the configuration's doing. A configuration is a GenerationBackend
// (run/generation_backend.h): an in-process cache or a deployed server (endpoint/).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "probe/check.h"
#include "probe/instance.h"
#include "probe/report.h"
#include "run/generation_backend.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {

class ProbeRunner {
 public:
  // backends[0] is the baseline; an in-process one must hold the longest prompt plus its budget.
  // vocab: the model's vocabulary size (drift's logits rows).
  ProbeRunner(const Tokenizer& tokenizer, size_t vocab, std::vector<GenerationBackend*> backends);
  // The model's sliding window when some of its layers slide (0: none): checked records then say
  // how far back their fact lies and whether it is beyond the window.
  void set_sliding_window(int window) { sliding_window_ = window; }

  // Greedy generation of instance.max_tokens under every backend, scored by instance.check.
  Expected<ProbeRecord> RunChecked(const ProbeInstance& instance);
  // K samples (seeds first_seed..first_seed+K-1, temperature `temperature`) of max_tokens under
  // every backend: the same seeds under each, so a pair differs only because the cache does.
  Expected<VarianceRecord> RunVariance(const std::string& id, int length, std::span<const int32_t> prompt, int samples,
                                       float temperature, int max_tokens, uint64_t first_seed = 1);
  // Greedy max_tokens under every backend; each configuration's KL(base ‖ cfg) along the baseline's
  // generated path (the configuration teacher-forced on the baseline's tokens). A backend without
  // full logits (an endpoint) gives its top-k rows instead, and the KL is then the lower bound of
  // eval/topk_fidelity.h; the plan refuses drift where a backend has neither.
  Expected<DriftRecord> RunDrift(const std::string& id, int length, std::span<const int32_t> prompt, int max_tokens);

 private:
  const Tokenizer& tokenizer_;
  size_t vocab_;
  std::vector<GenerationBackend*> backends_;
  int sliding_window_ = 0;
};

}  // namespace kvaudit
