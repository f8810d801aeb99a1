#include "run/scorer.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "run/log_softmax.h"
#include "run/sampling.h"
#include "model/forward.h"

namespace kvaudit {

ScoreSummary ScoreWindows(const Model& model, KvCache& cache, ThreadPool& pool,
                          const std::vector<std::vector<int32_t>>& windows, const ScoreOptions& options,
                          const std::function<void(const ScoredPosition&)>& on_position) {
  KV_CHECK(options.chunk >= 1);
  const int64_t vocab = model.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(options.chunk * vocab));  // [chunk, vocab]
  Forward forward(model, cache, pool, options.context);
  double nll_sum = 0;
  int64_t counted = 0;
  for (size_t w = 0; w < windows.size(); ++w) {
    const std::vector<int32_t>& ids = windows[w];
    cache.Reset();
    const int n = static_cast<int>(ids.size());
    for (int start = 0; start < n - 1; start += options.chunk) {
      // The last token of a window predicts nothing, so it is never run.
      const int len = std::min(options.chunk, n - 1 - start);
      forward.Run(std::span<const int32_t>(ids.data() + start, static_cast<size_t>(len)), start, logits.data(),
                  /*all_logits=*/true);
      for (int r = 0; r < len; ++r) {
        std::span<const float> row(logits.data() + static_cast<int64_t>(r) * vocab, static_cast<size_t>(vocab));
        ScoredPosition p;
        p.window = static_cast<int>(w);
        p.pos = start + r;
        p.token = ids[static_cast<size_t>(p.pos + 1)];
        p.nll = TokenNll(row, LogSumExp(row), p.token);
        p.argmax = Argmax(row);
        if (p.pos >= options.score_from) {
          nll_sum += p.nll;
          ++counted;
        }
        if (on_position) on_position(p);
      }
    }
  }
  ScoreSummary s;
  s.tokens = counted;
  s.mean_nll = counted ? nll_sum / static_cast<double>(counted) : 0.0;
  s.ppl = std::exp(s.mean_nll);
  return s;
}

}  // namespace kvaudit
