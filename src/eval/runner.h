// The streaming fidelity runner of `kvaudit eval`: the baseline cache and every configuration's
// cache run teacher-forced over the same window tokens in lockstep chunks of ≤ 512 positions.
// After each chunk every row is compared at once and the logits are dropped, so memory holds at
// most (1 + n_configs) × [chunk, vocab] logits, never [positions × vocab] (llama.cpp instead
// stores the base logits of every position in a file: 470 MB for 29k tokens of an 8k vocabulary).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "eval/config_groups.h"
#include "eval/fidelity_metrics.h"
#include "eval/topk_fidelity.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace kvaudit {

struct FidelityRunOptions {
  int score_from = 0;  // only positions ≥ this (0-based predicting index) are compared and recorded
  int chunk = 512;     // positions per forward call, ≤ Forward::kMaxChunk
  int context = 0;     // the run's context (--ctx), for the model's RoPE (model/forward.h)
  // Called before each window that runs, with its index and token count (the attention
  // diagnosis picks its sampled positions here).
  std::function<void(int window, int n_tokens)> begin_window;
  // Configurations known only by their top-k logprobs (endpoints: eval/remote_fidelity.h), compared
  // with the in-process baseline after the in-process configurations: WindowRecord::configs holds
  // caches.size() - 1 + n_topk entries. fetch_topk(ids) returns [n_topk][ids.size() - 1] rows.
  size_t n_topk = 0;
  std::function<Expected<std::vector<std::vector<TopKRow>>>(std::span<const int32_t> ids)> fetch_topk;
  // A frozen baseline (eval/reference_file.h): reference_rows(w) is window w's [n - 1] rows (those
  // from score_from on with their top k), compared in place of a baseline cache, which is not run
  // (caches[0] may be null); every KLD is then the top-k lower bound.
  std::function<std::vector<TopKRow>(size_t window)> reference_rows;
};

// caches[0] is the baseline, caches[1..] the in-process configurations (at least one configuration
// in all, counting options.n_topk). Windows with
// skip[w] (already in the progress log) are not run. on_window receives each finished window in
// ascending order; a non-ok Status from it stops the run and is returned.
Status RunFidelity(const Model& model, const std::vector<KvCache*>& caches, ThreadPool& pool,
                   const std::vector<std::vector<int32_t>>& windows, const std::vector<bool>& skip,
                   const FidelityRunOptions& options, const std::function<Status(WindowRecord&&)>& on_window);

// RunFidelity with the in-process configurations in groups (eval/config_groups.h): each window
// runs each group in turn beside its own run of the baseline (null with options.reference_rows),
// make_config(i) building and reserving configuration i's cache (0-based) for that group, freed
// before the next group's are built. on_window receives each window's record with every
// configuration in order, bitwise what RunFidelity gives over all of them at once with the same
// options.chunk. Neither options.n_topk nor options.begin_window (the attention diagnosis, whose
// shadows run beside every configuration) is taken.
using ConfigCacheMaker = std::function<Expected<std::unique_ptr<KvCache>>(size_t config)>;
Status RunFidelityInGroups(const Model& model, KvCache* baseline, const ConfigCacheMaker& make_config,
                           std::span<const ConfigGroup> groups, ThreadPool& pool,
                           const std::vector<std::vector<int32_t>>& windows, const std::vector<bool>& skip,
                           const FidelityRunOptions& options, const std::function<Status(WindowRecord&&)>& on_window);

}  // namespace kvaudit
