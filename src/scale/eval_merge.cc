// The eval half of `kvaudit merge`: every shard's windows read back, in ascending window order,
// summarized by SummarizeEval as the unsharded session does (bootstrap CIs over the merged set).
#include <optional>

#include "eval/resume_log.h"
#include "eval/summary.h"
#include "run/run_dir.h"
#include "scale/merge_parts.h"

namespace kvaudit {

Expected<MergeResult> MergeEvalShards(const std::vector<CheckedShard>& shards, const std::string& out) {
  const ShardManifest& first = shards[0].manifest;
  KV_ASSIGN_OR_RETURN(EvalSummaryInputs in, EvalSummaryInputsFromJson(first.summary));
  const size_t n_windows = static_cast<size_t>(in.info.n_windows);
  std::vector<std::optional<WindowRecord>> by_window(n_windows);  // [n_windows]
  MergeResult result;
  int resumed = 0;
  for (const CheckedShard& s : shards) {
    KV_ASSIGN_OR_RETURN(const std::string path, ShardJournal(s));
    std::vector<WindowRecord> recs;
    KV_ASSIGN_OR_RETURN(auto log, ProgressLog::Open(path, ShardFingerprint(s.manifest.fingerprint, s.manifest.shard),
                                                    in.heads.size(), n_windows, &recs, AttentionCells(in.info)));
    for (WindowRecord& r : recs) by_window[static_cast<size_t>(r.window)] = std::move(r);
    for (const int64_t w : s.manifest.units) {
      if (w < 0 || static_cast<size_t>(w) >= n_windows || !by_window[static_cast<size_t>(w)]) {
        return BadInput(path + ": window " + std::to_string(w) + " of shard " + s.manifest.shard.Text() +
                        " is not recorded; hint: rerun the shard, it resumes from its journal");
      }
    }
    AddShardRun(s.manifest.run, &result, &resumed);
  }
  std::vector<WindowRecord> records;  // ascending window order, as the unsharded session sums
  std::vector<nlohmann::json> lines;
  for (size_t w = 0; w < n_windows; ++w) {
    if (!by_window[w]) {
      return BadInput("merge: window " + std::to_string(w) + " is in no shard's journal; hint: the shards disagree on the partition, rerun them with one kvaudit");
    }
    lines.push_back(WindowToJson(*by_window[w]));
    records.push_back(std::move(*by_window[w]));
  }
  const std::vector<ConfigResult> configs = SummarizeEval(in, records);
  EvalRunInfo info = in.info;
  info.wall_s = result.wall_s, info.peak_rss_mb = result.peak_rss_mb, info.windows_resumed = resumed;
  KV_ASSIGN_OR_RETURN(const RunDir dir, RunDir::Prepare(out, false));
  KV_RETURN_IF_ERROR(WriteMergedJournal(dir.journal_path(), first.journal_kind, first.fingerprint, lines));
  result.kind = "eval", result.shards = static_cast<int>(shards.size()), result.units = static_cast<int>(n_windows);
  result.results = ResultsJson(info, configs);
  result.table = ResultsTable(info, configs);
  KV_RETURN_IF_ERROR(dir.WriteResults(result.results));
  result.results_path = dir.results_path();
  return result;
}

}  // namespace kvaudit
