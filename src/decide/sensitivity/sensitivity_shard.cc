// A round of a sensitivity shard (`--shard I/N [--merged MERGED]`; docs/scale-out.md "Staged
// jobs"). The proxy stage's windows are independent, the parts stage's configurations depend on
// the proxy scores of every window (--stage auto picks the top parts), so a sharded run takes two
// rounds with a merge between them: round 1 computes this shard's proxy windows; round 2 resumes
// the merged proxy stage wholly (computing nothing), selects the parts exactly as the unsharded
// run does, and computes this shard's windows of the parts stage. Each stage directory is an
// ordinary eval shard (its own journal and shard.json); DIR/shard.json names the stages a round
// computed, for `kvaudit merge`.
#include <fstream>
#include <sstream>

#include "decide/sensitivity/sensitivity.h"
#include "job/job_run.h"
#include "run/run_dir.h"
#include "run/shard_manifest.h"

namespace kvaudit {
namespace {

// DIR/results.json (a complete merge) is over `windows` windows, as this run's plan.
Status CheckMergedWindows(const std::string& dir, int windows) {
  std::ifstream in(SubDir(dir, "results.json"), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* n = j.is_object() && j.contains("data") ? &j["data"] : nullptr;
  if (n && n->contains("windows") && (*n)["windows"] == windows) return Status::Ok();
  return BadInput(SubDir(dir, "results.json") + " is not the merged proxy stage of " + std::to_string(windows) +
                  " windows; hint: --merged must name the directory kvaudit merge wrote for these shards, with the "
                  "same flags");
}

}  // namespace

ShardRound SensitivityShardRound(const SensitivityOptions& o) {
  const Expected<SensitivityStage> stage = ParseStage(o.stage);
  const bool parts_stage = stage && *stage != SensitivityStage::kProxy;
  const bool proxy_merged = !o.merged.empty() && HasCompleteResults(SubDir(o.merged, "proxy"));
  if (!proxy_merged) return {{"proxy"}, parts_stage};
  if (!parts_stage) return {};  // nothing beyond the proxy stage
  const std::string parts = StageName(*stage);
  if (HasCompleteResults(SubDir(o.merged, parts))) return {};
  return {{parts}, false};
}

Expected<SensitivityResult> SensitivitySession::RunShard() {
  const SensitivityOptions& o = plan_.options;
  KV_ASSIGN_OR_RETURN(const StagedJobRun job,
                      StagedJobRun::Prepare("sensitivity", o, plan_.clock, plan_.eval.info.threads));
  SensitivityResult r;
  r.stage = plan_.stage, r.model_hash = plan_.eval.model_hash, r.target = plan_.options.target;
  r.shard_round = SensitivityShardRound(o);
  const std::vector<std::string>& stages = r.shard_round.stages;
  auto manifest = [&](bool finished) -> Status {
    KV_ASSIGN_OR_RETURN(const RunTotals t, job.WriteRound(r.shard_round, finished));
    r.wall_s = t.wall_s, r.peak_rss_mb = t.peak_rss_mb;
    return Status::Ok();
  };
  r.results_path = job.shard_path();
  KV_RETURN_IF_ERROR(manifest(false));
  if (stages == std::vector<std::string>{"proxy"}) {  // round 1: planned for this stage and shard
    KV_ASSIGN_OR_RETURN(const EvalSessionResult proxy, EvalSession(plan_.eval).Run());
    r.shard_windows = proxy.shard_windows;
    KV_RETURN_IF_ERROR(manifest(true));
    return r;
  }
  if (stages.empty()) {  // every stage merged: resumed from MERGED (nothing computed), for a job
    // that goes on from the result (recommend's verification); the unsharded run writes results.json
    KV_RETURN_IF_ERROR(CheckMergedWindows(SubDir(o.merged, "proxy"), plan_.eval.info.n_windows));
    plan_.eval.Reshard({});
    plan_.eval.options.restart = false;
    KV_ASSIGN_OR_RETURN(SensitivityResult merged, Compute(o.merged));
    merged.shard_round = r.shard_round, merged.results_path = r.results_path;
    r = std::move(merged);
    KV_RETURN_IF_ERROR(manifest(true));
    return r;
  }
  // Round 2: the merged proxy stage, every window resumed from its journal (nothing computed;
  // checked first, so that a merge of other windows is refused instead of completed here).
  const std::string merged_proxy = SubDir(o.merged, "proxy");
  KV_RETURN_IF_ERROR(CheckMergedWindows(merged_proxy, plan_.eval.info.n_windows));
  plan_.eval.options.out = merged_proxy, plan_.eval.options.restart = false;
  plan_.eval.Reshard({});
  KV_ASSIGN_OR_RETURN(const EvalSessionResult proxy, EvalSession(plan_.eval).Run());
  const std::vector<std::vector<int>> picked = SelectParts(TakeProxy(proxy, &r), &r.top_k);
  KV_RETURN_IF_ERROR(plan_.eval.Reconfigure({plan_.eval.info.baseline_spec, PartSpecs(picked), o.kv.kv_calib}, 0,
                                            SubDir(o.out, stages[0])));
  plan_.eval.Reshard(o.shard);
  KV_ASSIGN_OR_RETURN(const EvalSessionResult parts, EvalSession(plan_.eval).Run());
  r.shard_windows = parts.shard_windows;
  KV_RETURN_IF_ERROR(manifest(true));
  return r;
}

}  // namespace kvaudit
