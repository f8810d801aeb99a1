// Runs probe instances under the baseline cache and every configuration's cache (issue 5). Each
// instance is generated once per cache from the same prompt ids with the same decoding, so any
// difference between a pair is the cache's doing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "probe/check.h"
#include "probe/instance.h"
#include "probe/report.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace kvaudit {

class ProbeRunner {
 public:
  // caches[0] is the baseline; each must hold the longest prompt plus its generation budget.
  ProbeRunner(const Model& model, std::vector<KvCache*> caches, ThreadPool& pool);

  // Greedy generation of instance.max_tokens under every cache, scored by instance.check.
  ProbeRecord RunChecked(const ProbeInstance& instance);
  // K samples (seeds first_seed..first_seed+K-1, temperature `temperature`) of max_tokens under
  // every cache: the same seeds under each, so a pair differs only because the cache does.
  VarianceRecord RunVariance(const std::string& id, int length, std::span<const int32_t> prompt, int samples,
                             float temperature, int max_tokens, uint64_t first_seed = 1);
  // Greedy max_tokens under every cache; each configuration's KL(base ‖ cfg) along the baseline's
  // generated path (the configuration teacher-forced on the baseline's tokens).
  DriftRecord RunDrift(const std::string& id, int length, std::span<const int32_t> prompt, int max_tokens);

 private:
  const Model& model_;
  std::vector<KvCache*> caches_;
  ThreadPool& pool_;
};

}  // namespace kvaudit
