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

// What a merge covers. Complete: every shard given and finished. Partial (merge --partial): the
// shards given may be unfinished, some indexes missing, some directories not started.
struct MergeScope {
  bool partial = false;
  int count = 0;                         // the run's shard count
  std::vector<int> missing;              // indexes no directory was given for
  std::vector<std::string> not_started;  // directories without a manifest yet
};

// Per shard, what it owns and what of that is recorded; in the partial block.
struct ShardProgress {
  int index = 0;
  std::string dir;
  bool finished = false;
  size_t owned = 0, recorded = 0;
};

// shards: ascending by index, each once, same fingerprint and version; complete scope: every
// index 0..N-1, all finished.
Expected<MergeResult> MergeEvalShards(const std::vector<CheckedShard>& shards, const MergeScope& scope,
                                      const std::string& out);
// A staged job's shards (audit, recommend, sensitivity): each stage of the round (its manifest's
// `stages`, below every shard) by MergeShards into OUT/<stage>.
Expected<MergeResult> MergeStagedShards(const std::vector<CheckedShard>& shards, const MergeScope& scope,
                                        const std::string& out);
Expected<MergeResult> MergeProbeShards(const std::vector<CheckedShard>& shards, const MergeScope& scope,
                                       const std::string& out);

// results.json's "partial" block (docs/results-schema.md): unit name, units recorded and in the
// run, and per shard index its state (finished, unfinished, missing) with owned and recorded.
nlohmann::json PartialJson(const MergeScope& scope, const std::vector<ShardProgress>& shards, const std::string& unit,
                           size_t recorded, size_t total);

// DIR/progress.jsonl of a shard, which must exist when the shard has finished; "" for an
// unfinished one that has not opened it yet (nothing recorded).
Expected<std::string> ShardJournal(const CheckedShard& s);

// The merged journal: the unsharded run's header (`kind`, the fingerprint without the shard) and
// every record in unit order, so an unsharded run with the same flags resumes from OUT wholly.
Status WriteMergedJournal(const std::string& path, const std::string& kind, const nlohmann::json& fingerprint,
                          const std::vector<nlohmann::json>& records);

// Sums of the shards' run blocks: wall_s and resumed summed, peak_rss_mb the largest.
void AddShardRun(const nlohmann::json& run, MergeResult* out, int* resumed);

}  // namespace kvaudit
