#include "job/job_run.h"

#include <algorithm>
#include <cstdio>

#include "run/interrupt.h"
#include "run/shard.h"

namespace kvaudit {

nlohmann::json ShardRunJson(const RunTotals& totals, int resumed, int threads) {
  return {{"wall_s", totals.wall_s}, {"peak_rss_mb", totals.peak_rss_mb}, {"resumed", resumed}, {"threads", threads}};
}

Expected<JobRun> JobRun::Open(JobKind kind, const JobOptions& options, nlohmann::json fingerprint,
                              const std::vector<int64_t>& unit_costs, std::vector<nlohmann::json>* recorded) {
  KV_CHECK(!fingerprint.contains("shard"));  // the shard entry is the skeleton's to add
  KV_ASSIGN_OR_RETURN(RunDir dir, RunDir::Prepare(options.out, options.restart));
  JobRun run(std::move(kind), std::move(dir), options.shard);
  run.journal_path_ = run.dir_.journal_path();
  // A shard's journal names its shard: a rerun as another shard of the same run is refused.
  const nlohmann::json header = run.sharded() ? ShardFingerprint(fingerprint, run.shard_) : fingerprint;
  KV_ASSIGN_OR_RETURN(
      run.journal_, JsonlJournal::Open(run.journal_path_, run.kind_.journal_kind, header, run.kind_.record, recorded));
  run.fingerprint_ = std::move(fingerprint);
  run.owned_.assign(unit_costs.size(), run.sharded() ? 0 : 1);
  if (run.sharded()) {
    for (size_t u : ShardUnits(unit_costs, run.shard_.index, run.shard_.count)) run.owned_[u] = 1;
  }
  // From here on Ctrl-C says how far the journal got; a rerun says what it takes from it.
  const auto owned = static_cast<int64_t>(std::count(run.owned_.begin(), run.owned_.end(), 1));
  const auto done = static_cast<int64_t>(recorded->size());
  const std::string records = run.kind_.record + "s";
  WatchInterrupts();
  SetInterruptContext(run.kind_.name, records, run.journal_path_, owned);
  if (done > 0) {
    std::fprintf(stderr, "kvaudit: resuming %s: %lld of %lld %s already done (%s)\n", run.kind_.name.c_str(),
                 static_cast<long long>(done), static_cast<long long>(owned), records.c_str(),
                 run.journal_path_.c_str());
  }
  return run;
}

std::vector<int64_t> JobRun::owned_units() const {
  std::vector<int64_t> out;  // ascending
  for (size_t u = 0; u < owned_.size(); ++u) {
    if (owned_[u]) out.push_back(static_cast<int64_t>(u));
  }
  return out;
}

Status JobRun::WriteShard(const nlohmann::json& summary, const nlohmann::json& run, bool finished) const {
  KV_CHECK(sharded());
  ShardManifest m;
  m.kind = kind_.name, m.journal_kind = kind_.journal_kind, m.shard = shard_;
  m.fingerprint = fingerprint_, m.units = owned_units(), m.summary = summary, m.run = run, m.finished = finished;
  return WriteShardManifest(dir_.dir(), m);
}

Expected<std::string> JobRun::Finish(const nlohmann::json& results) const {
  if (sharded()) return shard_path();  // no statistics of a part: `kvaudit merge` computes them
  KV_RETURN_IF_ERROR(dir_.WriteResults(results));
  return dir_.results_path();
}

Expected<StagedJobRun> StagedJobRun::Prepare(std::string kind, const JobOptions& options, const RunClock& clock,
                                             int threads) {
  KV_ASSIGN_OR_RETURN(RunDir dir, RunDir::Prepare(options.out, options.restart));
  return StagedJobRun(std::move(kind), std::move(dir), options.shard, clock, threads);
}

Expected<RunTotals> StagedJobRun::WriteRound(const ShardRound& round, bool finished) const {
  KV_CHECK(sharded());
  const RunTotals totals = finished ? clock_.Stop() : RunTotals{};
  // A staged shard resumes inside its stages (each an eval or probe shard with its own count).
  KV_RETURN_IF_ERROR(
      WriteStagedShardManifest(dir_.dir(), kind_, shard_, round, ShardRunJson(totals, 0, threads_), finished));
  return totals;
}

Expected<std::string> StagedJobRun::WriteResults(const nlohmann::json& results) const {
  KV_RETURN_IF_ERROR(dir_.WriteResults(results));
  return dir_.results_path();
}

}  // namespace kvaudit
