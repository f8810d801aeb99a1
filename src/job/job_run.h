// The skeleton every job runs in (docs/architecture.md, "Jobs as plan + session"). A resumable
// job (eval, probe) plugs in its name, its fingerprint, its units' costs and its records; JobRun
// does the rest in one order for all of them: --out is prepared (--restart removes the journal),
// the journal is opened (a rerun with other flags is refused before anything in DIR changes), the
// units this run owns are fixed (--shard I/N: run/shard.h), a shard writes DIR/shard.json
// unfinished, each unit's record is journaled as it finishes, and the run ends with
// DIR/results.json, or for a shard with shard.json again, finished. A rerun that finds records in
// the journal says so on stderr; Ctrl-C or SIGTERM says how far it got (run/interrupt.h). A job
// made of stages (sensitivity, recommend, audit) runs each stage as an eval or probe job below its
// own DIR and writes only its results or its round: StagedJobRun.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/job_options.h"
#include "run/jsonl_journal.h"
#include "run/run_clock.h"
#include "run/run_dir.h"
#include "run/shard_manifest.h"

namespace kvaudit {

// What a job is called in its files and messages.
struct JobKind {
  std::string name;          // shard.json's "kind": "eval", "probe"
  std::string journal_kind;  // the journal's header key: "kvaudit_eval_progress"
  std::string record;        // what one journal line is, in messages: "window", "probe"
};

// The run block of shard.json: this shard's wall time and peak memory (zero before it finished),
// the units it took from its journal, its threads.
nlohmann::json ShardRunJson(const RunTotals& totals, int resumed, int threads);

class JobRun {
 public:
  // fingerprint: what the records depend on, without "shard" (a shard's journal adds it, and
  // shard.json carries it as is: equal across the shards of a run). unit_costs: [n_units], what
  // --shard splits. *recorded: the journal's lines after its header, in file order.
  static Expected<JobRun> Open(JobKind kind, const JobOptions& options, nlohmann::json fingerprint,
                               const std::vector<int64_t>& unit_costs, std::vector<nlohmann::json>* recorded);

  const std::string& journal_path() const { return journal_path_; }
  bool sharded() const { return shard_.on(); }
  // [n_units] 1 where this run computes the unit: every unit without --shard, else the shard's.
  const std::vector<uint8_t>& owned() const { return owned_; }
  std::vector<int64_t> owned_units() const;  // the indexes of owned(), ascending

  // One finished unit's record: appended, then fsync'ed.
  Status Record(const nlohmann::json& line) { return journal_->Append(line); }
  // DIR/shard.json (a shard only). summary: the job's inputs to `kvaudit merge` besides the records.
  Status WriteShard(const nlohmann::json& summary, const nlohmann::json& run, bool finished) const;
  // The run's last file: DIR/results.json (unsharded; `results` written) or, for a shard, the path
  // of the shard.json its last WriteShard left. Returns the path the job reports.
  Expected<std::string> Finish(const nlohmann::json& results) const;
  std::string shard_path() const { return SubDir(dir_.dir(), ShardManifest::kFile); }

 private:
  JobRun(JobKind kind, RunDir dir, ShardSpec shard) : kind_(std::move(kind)), dir_(std::move(dir)), shard_(shard) {}
  JobKind kind_;
  RunDir dir_;
  ShardSpec shard_;
  std::string journal_path_;
  nlohmann::json fingerprint_;  // without "shard"
  std::vector<uint8_t> owned_;  // [n_units]
  std::unique_ptr<JsonlJournal> journal_;
};

// DIR of a job made of stages: its results.json when unsharded; for a shard, DIR/shard.json naming
// the stages this round computed (run/shard_manifest.h ShardRound), unfinished while they run.
class StagedJobRun {
 public:
  // kind: "sensitivity", "recommend", "audit". clock: started with the job's plan.
  static Expected<StagedJobRun> Prepare(std::string kind, const JobOptions& options, const RunClock& clock,
                                        int threads);
  const RunDir& dir() const { return dir_; }
  bool sharded() const { return shard_.on(); }
  // DIR/shard.json for `round`; finished: the run block carries the wall time and memory so far.
  // Returns the totals it wrote (zero when not finished).
  Expected<RunTotals> WriteRound(const ShardRound& round, bool finished) const;
  Expected<std::string> WriteResults(const nlohmann::json& results) const;
  std::string shard_path() const { return SubDir(dir_.dir(), ShardManifest::kFile); }

 private:
  StagedJobRun(std::string kind, RunDir dir, ShardSpec shard, RunClock clock, int threads)
      : kind_(std::move(kind)), dir_(std::move(dir)), shard_(shard), clock_(clock), threads_(threads) {}
  std::string kind_;
  RunDir dir_;
  ShardSpec shard_;
  RunClock clock_;
  int threads_;
};

}  // namespace kvaudit
