// `kvaudit merge DIR... --out DIR` (docs/scale-out.md): the shards of one `--shard I/N`
// eval or probe run combined into the results the unsharded run writes. Every shard's manifest
// (run/shard_manifest.h) must name the same run (the fingerprint without the shard entry and the
// kvaudit version) and the same shard count, each index 0..N-1 exactly once; then every record
// is read from the shards' journals, put in the unsharded order and summarized by the very
// function the session calls (eval/summary.h SummarizeEval, probe/report.h ProbeResultsJson), so
// results.json equals the unsharded run's but for its run block.
// With `partial` (`merge --partial`, while shards still run): shards that have not finished or
// not started, and missing indexes, are allowed; the results are over the units recorded so far
// (their intervals over those units alone) and carry a `partial` block saying what is in them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

struct MergeResult {
  std::string kind;                    // "eval", "probe", or a staged job: "audit", "recommend", "sensitivity"
  int shards = 0, units = 0;           // shards merged; windows or probe units in all
  double wall_s = 0, peak_rss_mb = 0;  // summed / the largest over the shards
  std::string table;                   // the terminal table the unsharded run prints
  nlohmann::json partial;              // null for a complete merge; else results.json's "partial" block
  nlohmann::json results;    // OUT/results.json's content; a staged job: {kind, more_rounds, stages: {stage: results}}
  std::string results_path;  // OUT/results.json, written (with OUT/progress.jsonl); an audit: OUT
  std::vector<MergeResult> stages;  // a staged job: each stage's merge (kind = the stage), in stage order
  bool more_rounds = false;         // a staged job: the shards have another round to run (--merged OUT)
};

// BadInput (one line) for a missing or damaged shard, mixed inputs (the first differing key and
// the two directories), disagreeing shard counts, a duplicated or a missing shard index.
Expected<MergeResult> MergeShards(const std::vector<std::string>& dirs, const std::string& out, bool partial = false);

}  // namespace kvaudit
