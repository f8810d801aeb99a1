#include "eval/runner.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>

#include "model/forward.h"

namespace kvaudit {

Status RunFidelity(const Model& model, const std::vector<KvCache*>& caches, ThreadPool& pool,
                   const std::vector<std::vector<int32_t>>& windows, const std::vector<bool>& skip,
                   const FidelityRunOptions& options, const std::function<Status(WindowRecord&&)>& on_window) {
  KV_CHECK(!caches.empty() && caches.size() - 1 + options.n_topk >= 1 && skip.size() == windows.size());
  KV_CHECK(options.n_topk == 0 || options.fetch_topk);
  KV_CHECK(options.chunk >= 1 && options.chunk <= Forward::kMaxChunk);
  const size_t n_caches = caches.size(), n_cfg = n_caches - 1, n_topk = options.n_topk;
  const int64_t vocab = model.config().vocab_size;
  const size_t row = static_cast<size_t>(vocab);
  const bool frozen = static_cast<bool>(options.reference_rows);  // the baseline cache is not run
  const size_t first_run = frozen ? 1 : 0;
  std::vector<std::unique_ptr<Forward>> forwards(n_caches);  // [n_caches], one per cache run (activations are per pass)
  std::vector<std::vector<float>> logits(n_caches);          // [n_caches][chunk, vocab]
  for (size_t c = first_run; c < n_caches; ++c) {
    forwards[c] = std::make_unique<Forward>(model, *caches[c], pool, options.context);
    logits[c].resize(static_cast<size_t>(options.chunk) * row);
  }
  for (size_t w = 0; w < windows.size(); ++w) {
    if (skip[w]) continue;
    const std::vector<int32_t>& ids = windows[w];
    const int n = static_cast<int>(ids.size());
    WindowRecord rec;
    rec.window = static_cast<int>(w);
    rec.first_pos = std::min(options.score_from, std::max(n - 1, 0));
    const size_t n_scored = static_cast<size_t>(std::max(0, n - 1 - rec.first_pos));
    rec.tokens.assign(ids.begin() + rec.first_pos + 1,
                      ids.begin() + rec.first_pos + 1 + static_cast<std::ptrdiff_t>(n_scored));
    rec.nll_base.resize(n_scored);
    rec.configs.resize(n_cfg + n_topk);
    for (auto& c : rec.configs) {
      c.kld.resize(n_scored), c.nll.resize(n_scored), c.dp.resize(n_scored);
      c.top1.resize(n_scored), c.top5_drop.resize(n_scored);
    }
    std::vector<std::vector<TopKRow>> topk;  // [n_topk][n - 1]
    if (n_topk > 0) {
      KV_ASSIGN_OR_RETURN(topk, options.fetch_topk(ids));
      KV_CHECK(topk.size() == n_topk);
      for (const auto& rows : topk) KV_CHECK(rows.size() == static_cast<size_t>(std::max(n - 1, 0)));
    }
    std::vector<TopKRow> reference;  // [n - 1] when frozen
    if (frozen) {
      reference = options.reference_rows(w);
      KV_CHECK(reference.size() == static_cast<size_t>(std::max(n - 1, 0)));
    }
    if (options.begin_window) options.begin_window(static_cast<int>(w), n);
    for (size_t c = first_run; c < n_caches; ++c) caches[c]->Reset();
    for (int start = 0; start < n - 1; start += options.chunk) {
      // The last token of a window predicts nothing, so it is never run.
      const int len = std::min(options.chunk, n - 1 - start);
      // Chunks wholly before score_from only fill the caches: skip the [len, vocab] output head.
      const bool need_logits = start + len > options.score_from;
      const std::span<const int32_t> toks(ids.data() + start, static_cast<size_t>(len));
      for (size_t c = first_run; c < n_caches; ++c) forwards[c]->Run(toks, start, logits[c].data(), need_logits);
      if (!need_logits) continue;
      const int r0 = std::max(0, options.score_from - start);
      // Rows are independent: split them over the pool; each row's arithmetic is fixed, so the
      // result does not depend on the thread count.
      pool.ParallelFor(len - r0, 1, [&](int64_t begin, int64_t end) {
        BaseRow base;
        for (int64_t k = begin; k < end; ++k) {
          const int r = r0 + static_cast<int>(k);
          const size_t i = static_cast<size_t>(start + r - rec.first_pos);
          const TopKRow* frozen_row = frozen ? &reference[static_cast<size_t>(start + r)] : nullptr;
          if (frozen) {
            KV_CHECK(frozen_row->token == rec.tokens[i] && !frozen_row->top.empty());
            rec.nll_base[i] = -frozen_row->logprob;
          } else {
            base.Set({logits[0].data() + static_cast<size_t>(r) * row, row}, rec.tokens[i]);
            rec.nll_base[i] = base.nll();
          }
          for (size_t c = 0; c < n_cfg; ++c) {
            const std::span<const float> cfg(logits[c + 1].data() + static_cast<size_t>(r) * row, row);
            const PositionFidelity f = frozen ? CompareTopK(*frozen_row, cfg) : base.Compare(cfg);
            WindowRecord::Config& out = rec.configs[c];
            out.kld[i] = f.kld, out.nll[i] = f.nll, out.dp[i] = f.dp;
            out.top1[i] = f.top1, out.top5_drop[i] = f.top5_drop;
          }
          for (size_t t = 0; t < n_topk; ++t) {
            const TopKRow& cfg = topk[t][static_cast<size_t>(start + r)];
            const PositionFidelity f = frozen ? CompareTopK(*frozen_row, cfg) : CompareTopK(base, cfg);
            WindowRecord::Config& out = rec.configs[n_cfg + t];
            out.kld[i] = f.kld, out.nll[i] = f.nll, out.dp[i] = f.dp;
            out.top1[i] = f.top1, out.top5_drop[i] = f.top5_drop;
          }
        }
      });
    }
    KV_RETURN_IF_ERROR(on_window(std::move(rec)));
  }
  return Status::Ok();
}

namespace {

// Window w alone, for one group: its caches built, run beside the baseline, freed on return.
Expected<WindowRecord> RunGroup(const Model& model, KvCache* baseline, const ConfigCacheMaker& make_config,
                                const ConfigGroup& group, ThreadPool& pool,
                                const std::vector<std::vector<int32_t>>& windows, size_t w,
                                const FidelityRunOptions& options) {
  std::vector<std::unique_ptr<KvCache>> owned;  // [group.count]
  std::vector<KvCache*> caches{baseline};       // [1 + group.count]
  for (size_t i = 0; i < group.count; ++i) {
    KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, make_config(group.first + i));
    caches.push_back(cache.get());
    owned.push_back(std::move(cache));
  }
  std::vector<bool> only(windows.size(), true);  // [n_windows] every window but w skipped
  only[w] = false;
  WindowRecord rec;
  KV_RETURN_IF_ERROR(RunFidelity(model, caches, pool, windows, only, options, [&](WindowRecord&& r) {
    rec = std::move(r);
    return Status::Ok();
  }));
  return rec;
}

}  // namespace

Status RunFidelityInGroups(const Model& model, KvCache* baseline, const ConfigCacheMaker& make_config,
                           std::span<const ConfigGroup> groups, ThreadPool& pool,
                           const std::vector<std::vector<int32_t>>& windows, const std::vector<bool>& skip,
                           const FidelityRunOptions& options, const std::function<Status(WindowRecord&&)>& on_window) {
  KV_CHECK(!groups.empty() && options.n_topk == 0 && !options.begin_window && skip.size() == windows.size());
  KV_CHECK((baseline != nullptr) != static_cast<bool>(options.reference_rows) && groups.front().first == 0);
  const size_t n_cfg = groups.back().first + groups.back().count;
  for (size_t w = 0; w < windows.size(); ++w) {
    if (skip[w]) continue;
    WindowRecord rec;  // the first group's window, tokens and baseline; every group's configurations
    for (const ConfigGroup& g : groups) {
      KV_ASSIGN_OR_RETURN(WindowRecord part, RunGroup(model, baseline, make_config, g, pool, windows, w, options));
      KV_CHECK(part.configs.size() == g.count);
      if (&g == &groups.front()) {
        std::vector<WindowRecord::Config> configs = std::move(part.configs);
        rec = std::move(part);
        rec.configs.assign(n_cfg, {});
        std::move(configs.begin(), configs.end(), rec.configs.begin() + static_cast<std::ptrdiff_t>(g.first));
        continue;
      }
      // Every run of the baseline is the same bits (a forward pass depends only on its tokens and cache).
      KV_CHECK(part.nll_base.size() == rec.nll_base.size());
      KV_CHECK(rec.nll_base.empty() ||
               std::memcmp(part.nll_base.data(), rec.nll_base.data(), rec.nll_base.size() * sizeof(double)) == 0);
      std::move(part.configs.begin(), part.configs.end(), rec.configs.begin() + static_cast<std::ptrdiff_t>(g.first));
    }
    KV_RETURN_IF_ERROR(on_window(std::move(rec)));
  }
  return Status::Ok();
}

}  // namespace kvaudit
