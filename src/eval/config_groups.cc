#include "eval/config_groups.h"

#include <numeric>

#include "base/system_memory.h"
#include "kv/store/chunked_rows.h"
#include "kv/store/reservation.h"
#include "model/forward.h"

namespace kvaudit {
namespace {

// A cache's storage grows in chunks of kCacheChunk positions: a reservation of n positions holds
// ⌈n / kCacheChunk⌉ chunks.
uint64_t CacheBytes(const KvCache& cache, int max_len) {
  const uint64_t chunk = kCacheChunk;
  const uint64_t positions = (static_cast<uint64_t>(max_len) + chunk - 1) / chunk * chunk;
  return cache.bytes_per_token() * positions;
}

}  // namespace

std::vector<ConfigGroup> GroupConfigs(std::span<const uint64_t> bytes, uint64_t budget) {
  std::vector<ConfigGroup> groups;
  uint64_t held = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (groups.empty() || held + bytes[i] > budget || held + bytes[i] < held) {
      groups.push_back({i, 0});
      held = 0;
    }
    groups.back().count += 1;
    held += bytes[i];
  }
  return groups;
}

uint64_t CacheRunBytes(const ModelConfig& c, int chunk) {
  return Forward::ActivationBytes(c) + static_cast<uint64_t>(chunk) * static_cast<uint64_t>(c.vocab_size) * 4;
}

Expected<ConfigMemory> MeasureConfigMemory(const KvConfigs& configs, const ModelConfig& c, int max_len, int chunk,
                                           bool frozen_baseline, uint64_t mapped_weight_bytes, uint64_t limit) {
  ConfigMemory m;
  const uint64_t run = CacheRunBytes(c, chunk);
  for (size_t i = frozen_baseline ? 1 : 0; i <= configs.n_configs(); ++i) {
    KV_ASSIGN_OR_RETURN(const std::unique_ptr<KvCache> cache, configs.MakeCache(i, max_len, 0));
    const uint64_t bytes = CacheBytes(*cache, max_len) + run;
    i == 0 ? (void)(m.baseline_bytes = bytes) : m.config_bytes.push_back(bytes);
  }
  if (limit == 0) {
    const uint64_t available = AvailableMemoryBytes();
    limit = available > mapped_weight_bytes ? available - mapped_weight_bytes : 0;
  }
  m.limit = limit;
  const uint64_t kept = m.baseline_bytes + limit / 8;
  m.budget = limit > kept ? limit - kept : 0;
  return m;
}

std::string GroupingNote(const ConfigMemory& memory, std::span<const ConfigGroup> groups) {
  const uint64_t all = std::accumulate(memory.config_bytes.begin(), memory.config_bytes.end(), uint64_t{0});
  size_t largest = 0;
  for (const ConfigGroup& g : groups) largest = std::max(largest, g.count);
  return "the " + std::to_string(memory.config_bytes.size()) + " configurations' caches need " + FormatBytes(all) +
         " beside the baseline's " + FormatBytes(memory.baseline_bytes) + " and " + FormatBytes(memory.limit) +
         " is available: they run in " + std::to_string(groups.size()) + " groups of at most " +
         std::to_string(largest) + ", the baseline computed once per group (the same numbers; more time)";
}

}  // namespace kvaudit
