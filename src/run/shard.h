// `--shard I/N` (docs/scale-out.md): one run's work units split over N independent runs.
// The partition is a pure function of the units' costs, so every shard computes the same split
// without talking to the others, and `kvaudit merge` (scale/merge.h) can check it was complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

struct ShardSpec {
  int index = 0;
  int count = 0;  // 0: not sharded (the whole run)
  bool on() const { return count > 0; }
  std::string Text() const { return std::to_string(index) + "/" + std::to_string(count); }
  nlohmann::json ToJson() const { return {{"index", index}, {"count", count}}; }
};

// "I/N" with 0 <= I < N and N >= 1; anything else is BadInput naming the flag.
Expected<ShardSpec> ParseShard(const std::string& text);

// The units of shard `index` of `count`, ascending. Greedy longest-processing-time: units in
// descending cost (ties: lower unit index first), each to the shard with the least cost so far
// (ties: lower shard index). Every unit lands in exactly one shard, and each shard's cost is at
// most total/count + max unit cost (when a unit is placed, the least-loaded shard holds at most
// the average). costs: [n_units], each >= 0.
std::vector<size_t> ShardUnits(const std::vector<int64_t>& costs, int index, int count);

// Which shard every unit goes to: [n_units] shard indexes (the same rule).
std::vector<int> AssignShards(const std::vector<int64_t>& costs, int count);

}  // namespace kvaudit
