// Teacher-forced scoring of token windows: NLL of every next token, streamed chunk by chunk so
// memory holds at most [chunk, vocab] logits whatever the window length.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace kvaudit {

struct ScoredPosition {
  int window = 0;
  int pos = 0;         // position i of the predicting token inside the window
  int32_t token = 0;   // the true next token (at i + 1)
  double nll = 0;      // -log p(token | window[0..i])
  int32_t argmax = 0;  // the model's top-1 at position i
};

struct ScoreSummary {
  int64_t tokens = 0;  // predicted positions counted in the mean
  double mean_nll = 0;
  double ppl = 0;
};

struct ScoreOptions {
  int score_from = 0;  // only positions i >= score_from enter the summary (llama.cpp scores the second half)
  int chunk = 512;     // positions per forward call (bounds the logits buffer)
  int context = 0;     // the run's context (--ctx), for the model's RoPE (model/forward.h)
};

// Each window runs from an empty cache. on_position (may be empty) sees every predicted
// position, including those before score_from.
ScoreSummary ScoreWindows(const Model& model, KvCache& cache, ThreadPool& pool,
                          const std::vector<std::vector<int32_t>>& windows, const ScoreOptions& options,
                          const std::function<void(const ScoredPosition&)>& on_position);

}  // namespace kvaudit
