// Inside scale/merge: the checked shards handed to each job's merge (eval_merge.cc, probe_merge.cc).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "run/shard_manifest.h"
#include "scale/merge.h"

namespace kvaudit {

struct CheckedShard {
  std::string dir;
  ShardManifest manifest;
};

// shards: every index 0..N-1 once, ascending by index, same fingerprint and version.
Expected<MergeResult> MergeEvalShards(const std::vector<CheckedShard>& shards, const std::string& out);
Expected<MergeResult> MergeProbeShards(const std::vector<CheckedShard>& shards, const std::string& out);

// DIR/progress.jsonl of a shard, which must exist (opening a journal creates a missing one).
Expected<std::string> ShardJournal(const CheckedShard& s);

// The merged journal: the unsharded run's header (`kind`, the fingerprint without the shard) and
// every record in unit order, so an unsharded run with the same flags resumes from OUT wholly.
Status WriteMergedJournal(const std::string& path, const std::string& kind, const nlohmann::json& fingerprint,
                          const std::vector<nlohmann::json>& records);

// Sums of the shards' run blocks: wall_s and resumed summed, peak_rss_mb the largest.
void AddShardRun(const nlohmann::json& run, MergeResult* out, int* resumed);

}  // namespace kvaudit
