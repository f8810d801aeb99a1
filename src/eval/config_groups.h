// Configuration groups of an eval (docs/architecture.md "Peak memory of the jobs"). The runner
// holds every cache of a window at once, the baseline's and each in-process configuration's, at
// the window's length. A job whose caches do not fit the memory available (a recommendation's
// parts stage: dozens of caches nearly the baseline's size) runs its configurations in
// consecutive groups instead, each group in lockstep with its own run of the baseline over the
// window. The baseline's logits are the same bits on every run (a forward pass depends only on its
// tokens and its cache), so grouping changes the time (the baseline is computed once per group),
// never a number, a record or a file: the journal still takes one record per window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/kv_configs.h"

namespace kvaudit {

struct ConfigGroup {
  size_t first = 0, count = 0;  // in-process configurations [first, first + count), 0-based
};

// Consecutive groups, each as long as its configurations' bytes ([n_configs]) sum to at most
// budget, so the fewest groups consecutive configurations allow. A configuration larger than the
// budget alone is a group of its own: its cache's reservation then says whether the machine can
// hold it (the one line "KV cache for N tokens needs ...").
std::vector<ConfigGroup> GroupConfigs(std::span<const uint64_t> bytes, uint64_t budget);

// What an eval's in-process configurations need and may hold.
struct ConfigMemory {
  std::vector<uint64_t> config_bytes;  // [n_configs] each one's cache at the window length + its run
  uint64_t baseline_bytes = 0;         // the baseline's cache + its run (0: a frozen reference)
  uint64_t limit = 0;                  // the memory the job may hold (JobOptions::memory_limit or the machine's)
  uint64_t budget = 0;                 // what the configurations may hold together: the limit less the rest
};

// One cache run's bytes beside its cache: its Forward's activations and a chunk of logits.
uint64_t CacheRunBytes(const ModelConfig& c, int chunk);

// The memory of the configurations of `configs` at max_len positions (each cache built without
// storage and asked its size: KvCache::bytes_per_token at a full cache), chunk positions per
// forward call; limit 0 = AvailableMemoryBytes() less the mapped weights' bytes (the kernel counts
// a mapped file's pages as available, but evicting them re-reads the weights on every product).
// budget = limit less the baseline's bytes and an eighth of the limit kept for everything else
// (tokens, records, attention scratch, the allocator's slack).
Expected<ConfigMemory> MeasureConfigMemory(const KvConfigs& configs, const ModelConfig& c, int max_len, int chunk,
                                           bool frozen_baseline, uint64_t mapped_weight_bytes, uint64_t limit);

// The line a grouped run prints (stderr): how many groups, why, and what it costs.
std::string GroupingNote(const ConfigMemory& memory, std::span<const ConfigGroup> groups);

}  // namespace kvaudit
