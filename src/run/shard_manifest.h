// DIR/shard.json: what a `--shard I/N` run leaves besides its journal (written when it starts,
// again when it has finished; docs/scale-out.md "What a shard writes").
// A shard writes no results.json: its statistics alone would be wrong for the
// run (bootstrap CIs, worst windows and the probes' Holm correction are over the whole set), so
// `kvaudit merge` computes them once over every shard's records. The manifest says which run the
// shard belongs to (the fingerprint without the shard entry, the kvaudit version), which units
// it owns, and the job's summary inputs (what the records alone do not say: specs, buckets,
// token classes), so merge needs neither the model nor the data.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/shard.h"

namespace kvaudit {

struct ShardManifest {
  std::string kind;             // "eval" or "probe"
  std::string journal_kind;     // the progress.jsonl header key ("kvaudit_eval_progress", ...)
  nlohmann::json fingerprint;   // the run's fingerprint without "shard": equal across the shards of a run
  std::string kvaudit_version;  // written: this binary's (run/provenance.h)
  ShardSpec shard;
  std::vector<int64_t> units;  // the unit indexes this shard owns, ascending (eval: windows; probe: see probe/plan.h)
  nlohmann::json summary;      // the job's summary inputs (eval/summary.h, probe/plan.h)
  nlohmann::json run;          // {"wall_s", "peak_rss_mb", "resumed", "threads"} of this shard's run
  // false from the shard's start until its last unit is recorded: `kvaudit merge` takes only
  // finished shards, `merge --partial` also the units an unfinished one has recorded so far.
  bool finished = false;

  static constexpr const char* kFile = "shard.json";
};

Status WriteShardManifest(const std::string& dir, const ShardManifest& m);
// A shard of a job that runs in stages (sensitivity, recommend, audit): DIR/shard.json of `kind`
// naming the stage directories (relative to DIR, e.g. "proxy", "recommend/sensitivity/auto") this
// round of the shard computed, each an eval or probe shard with its own manifest. They are the
// fingerprint too: shards of one round ran the same stages. run: as a manifest's run block.
struct ShardRound {
  std::vector<std::string> stages;  // relative to the job's out; empty: nothing left to shard
  bool more_rounds = false;         // a later round has stages to compute once this one is merged
  // `prefix/stage` for each stage (a job's stages inside another's: "recommend/" + "sensitivity/proxy").
  ShardRound Prefixed(const std::string& prefix) const;
};
Status WriteStagedShardManifest(const std::string& dir, const std::string& kind, const ShardSpec& shard,
                                const ShardRound& round, const nlohmann::json& run, bool finished);

// BadInput when DIR/shard.json is missing (a shard that has not started, or not a shard run) or
// malformed.
Expected<ShardManifest> ReadShardManifest(const std::string& dir);

// The fingerprint a shard's journal carries: the run's plus {"shard": {"index", "count"}}.
nlohmann::json ShardFingerprint(const nlohmann::json& fingerprint, const ShardSpec& shard);

}  // namespace kvaudit
