// Where a probe's text comes from (docs/endpoints.md): the engine under one KV cache in this
// process (LocalBackend, run/cache_generator.h), or a deployed server reached over HTTP (endpoint/
// remote_backend.h). The probes run every configuration through this one interface, so an
// in-process configuration and a remote one are compared by the same code.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "run/cache_generator.h"
#include "run/sampling.h"
#include "run/topk_row.h"

namespace kvaudit {

class GenerationBackend {
 public:
  virtual ~GenerationBackend() = default;
  // Up to max_tokens new tokens after prompt, ending before EOS (as CacheGenerator::Generate).
  // params.temperature <= 0 is greedy; otherwise params.seed makes the draw reproducible. A remote
  // backend that keeps failing returns the error (one line naming the endpoint).
  virtual Expected<std::vector<int32_t>> Generate(std::span<const int32_t> prompt, int max_tokens,
                                                  const SamplingParams& params) = 0;
  // Whether ForcedLogits gives the full distribution (an in-process cache does; an endpoint does not).
  virtual bool has_full_logits() const = 0;
  // Teacher-forced logits predicting continuation[i] after prompt + continuation[0..i):
  // [continuation.size(), vocab]. Only when has_full_logits().
  virtual std::vector<float> ForcedLogits(std::span<const int32_t> prompt, std::span<const int32_t> continuation) = 0;
  // Without full logits: whether ForcedTopK works (an endpoint with prompt logprobs), and the most
  // top logprobs it returns per position.
  virtual bool has_forced_top_k() const { return false; }
  virtual int max_top_k() const { return 0; }
  // Teacher-forced rows predicting continuation[i] after prompt + continuation[0..i), each with
  // the forced token's logprob and the top k: [continuation.size()]. Only when has_forced_top_k().
  virtual Expected<std::vector<TopKRow>> ForcedTopK(std::span<const int32_t> prompt,
                                                    std::span<const int32_t> continuation, int k) {
    (void)prompt, (void)continuation, (void)k;
    KV_CHECK_MSG(false, "ForcedTopK on a backend without it (check has_forced_top_k())");
    return std::vector<TopKRow>();
  }
};

// The engine under one in-process cache.
class LocalBackend final : public GenerationBackend {
 public:
  LocalBackend(const Model& model, KvCache& cache, ThreadPool& pool, int context = 0)
      : generator_(model, cache, pool, context) {}
  Expected<std::vector<int32_t>> Generate(std::span<const int32_t> prompt, int max_tokens,
                                          const SamplingParams& params) override {
    return generator_.Generate(prompt, max_tokens, params);
  }
  bool has_full_logits() const override { return true; }
  std::vector<float> ForcedLogits(std::span<const int32_t> prompt, std::span<const int32_t> continuation) override {
    return generator_.ForcedLogits(prompt, continuation);
  }

 private:
  CacheGenerator generator_;
};

}  // namespace kvaudit
