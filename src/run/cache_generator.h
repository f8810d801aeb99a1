// Text generation under one KV cache for the probes: prefill a prompt, then greedy or
// seeded sampled decoding, and teacher-forced scoring of a given continuation. The same generator
// runs the baseline and every configuration, so two runs differ only by their cache.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "run/sampling.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace kvaudit {

class CacheGenerator {
 public:
  // context: the run's, as Forward takes it (model/forward.h).
  CacheGenerator(const Model& model, KvCache& cache, ThreadPool& pool, int context = 0);

  // Up to max_tokens new tokens after prompt (stops before EOS). The cache must hold
  // prompt.size() + max_tokens positions.
  // params.temperature <= 0 is greedy. step_logits, if given, receives the logits of every
  // generated step: [n_generated, vocab].
  std::vector<int32_t> Generate(std::span<const int32_t> prompt, int max_tokens, const SamplingParams& params,
                                std::vector<float>* step_logits = nullptr);

  // The same generation, with on_step called after each sampled token other than EOS: the logits
  // it was sampled from ([vocab]) and the token. Returning false ends generation after that token
  // (the server's stop strings, per-request timeout and shutdown: docs/serve.md).
  using StepFn = std::function<bool(std::span<const float> logits, int32_t token)>;
  std::vector<int32_t> Generate(std::span<const int32_t> prompt, int max_tokens, const SamplingParams& params,
                                const StepFn& on_step);
  // Generate's prefill again, keeping every position's logits: [prompt.size(), vocab], row i
  // predicting prompt[i + 1], the last the first generated token (kvaudit serve's shadow monitor,
  // after the answer is out). The same chunks on the same freshly reset cache, so the cache goes
  // through the same states; rows of the output projection are batch-invariant (ops/matmul.h), so
  // every row is bitwise what that prefill computed or would have with all_logits.
  std::vector<float> PrefillLogits(std::span<const int32_t> prompt);

  // Teacher-forced: the logits predicting continuation[i] after prompt + continuation[0..i):
  // [continuation.size(), vocab].
  std::vector<float> ForcedLogits(std::span<const int32_t> prompt, std::span<const int32_t> continuation);

 private:
  const Model& model_;
  KvCache& cache_;
  Forward forward_;
};

}  // namespace kvaudit
