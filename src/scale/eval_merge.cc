// The eval half of `kvaudit merge`: every shard's windows read back, in ascending window order,
// summarized by SummarizeEval as the unsharded session does (bootstrap CIs over the merged set).
// Partial: the windows recorded so far, and the results say so (data.windows is their count).
#include <optional>

#include "eval/resume_log.h"
#include "eval/summary.h"
#include "run/run_dir.h"
#include "scale/merge_parts.h"

namespace kvaudit {
namespace {

// Reads shard s's recorded windows into by_window (read-only: a running shard may be appending).
Expected<ShardProgress> ReadShardWindows(const CheckedShard& s, const EvalSummaryInputs& in,
                                         std::vector<std::optional<WindowRecord>>& by_window) {
  ShardProgress p{s.manifest.shard.index, s.dir, s.manifest.finished, s.manifest.units.size(), 0};
  KV_ASSIGN_OR_RETURN(const std::string path, ShardJournal(s));
  std::vector<WindowRecord> recs;
  if (!path.empty()) {
    KV_RETURN_IF_ERROR(ReadProgressLog(path, ShardFingerprint(s.manifest.fingerprint, s.manifest.shard),
                                       in.heads.size(), by_window.size(), &recs, AttentionCells(in.info)));
  }
  std::vector<bool> owned(by_window.size(), false);  // [n_windows]
  for (const int64_t w : s.manifest.units) {
    if (w < 0 || static_cast<size_t>(w) >= by_window.size()) {
      return BadInput(s.dir + "/shard.json: window " + std::to_string(w) +
                      " is outside the run; hint: rerun the shard");
    }
    owned[static_cast<size_t>(w)] = true;
  }
  for (WindowRecord& r : recs) {
    if (!owned[static_cast<size_t>(r.window)]) continue;  // not this shard's (cannot happen with one kvaudit)
    by_window[static_cast<size_t>(r.window)] = std::move(r);
    ++p.recorded;
  }
  if (s.manifest.finished && p.recorded != p.owned) {
    for (const int64_t w : s.manifest.units) {
      if (!by_window[static_cast<size_t>(w)]) {
        return BadInput(path + ": window " + std::to_string(w) + " of shard " + s.manifest.shard.Text() +
                        " is not recorded; hint: rerun the shard, it resumes from its journal");
      }
    }
  }
  return p;
}

}  // namespace

Expected<MergeResult> MergeEvalShards(const std::vector<CheckedShard>& shards, const MergeScope& scope,
                                      const std::string& out) {
  const ShardManifest& first = shards[0].manifest;
  KV_ASSIGN_OR_RETURN(EvalSummaryInputs in, EvalSummaryInputsFromJson(first.summary));
  const size_t n_windows = static_cast<size_t>(in.info.n_windows);
  std::vector<std::optional<WindowRecord>> by_window(n_windows);  // [n_windows]
  MergeResult result;
  int resumed = 0;
  std::vector<ShardProgress> progress;
  for (const CheckedShard& s : shards) {
    KV_ASSIGN_OR_RETURN(ShardProgress p, ReadShardWindows(s, in, by_window));
    progress.push_back(std::move(p));
    if (s.manifest.finished) AddShardRun(s.manifest.run, &result, &resumed);
  }
  std::vector<WindowRecord> records;  // ascending window order, as the unsharded session sums
  std::vector<nlohmann::json> lines;
  for (size_t w = 0; w < n_windows; ++w) {
    if (!by_window[w] && scope.partial) continue;
    if (!by_window[w]) {
      return BadInput(
          "merge: window " + std::to_string(w) +
          " is in no shard's journal; hint: the shards disagree on the partition, rerun them with one kvaudit");
    }
    lines.push_back(WindowToJson(*by_window[w]));
    records.push_back(std::move(*by_window[w]));
  }
  if (records.empty()) {
    return BadInput("merge --partial: no window is recorded yet in the " + std::to_string(shards.size()) +
                    " shards given; hint: wait until a shard has finished a window");
  }
  if (scope.partial) {
    result.partial = PartialJson(scope, progress, "windows", records.size(), n_windows);
    in.info.n_windows = static_cast<int>(records.size());  // what the statistics are over
  }
  const std::vector<ConfigResult> configs = SummarizeEval(in, records);
  EvalRunInfo info = in.info;
  info.wall_s = result.wall_s, info.peak_rss_mb = result.peak_rss_mb, info.windows_resumed = resumed;
  KV_ASSIGN_OR_RETURN(const RunDir dir, RunDir::Prepare(out, false));
  KV_RETURN_IF_ERROR(WriteMergedJournal(dir.journal_path(), first.journal_kind, first.fingerprint, lines));
  result.kind = "eval", result.shards = static_cast<int>(shards.size()),
  result.units = static_cast<int>(records.size());
  result.results = ResultsJson(info, configs);
  if (scope.partial) result.results["partial"] = result.partial;
  result.table = ResultsTable(info, configs);
  KV_RETURN_IF_ERROR(dir.WriteResults(result.results));
  result.results_path = dir.results_path();
  return result;
}

}  // namespace kvaudit
