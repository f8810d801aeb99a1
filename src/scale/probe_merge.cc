// The probe half of `kvaudit merge`: every shard's records read back by id, put in the unsharded
// order (probe/units.h: instances, variance, drift) and handed to ProbeResultsJson, as the
// unsharded session does (attribution, McNemar and Holm over the whole set). Partial: the units
// recorded so far.
#include <map>
#include <optional>

#include "probe/report.h"
#include "probe/run_info_json.h"
#include "run/jsonl_journal.h"
#include "run/run_dir.h"
#include "scale/merge_parts.h"

namespace kvaudit {
namespace {

template <class Parse, class Records>
Status Take(const nlohmann::json& line, size_t n_caches, Parse parse, Records& into) {
  auto rec = parse(line, n_caches);
  if (!rec)
    return BadInput("merge: damaged probe record " + line.value("id", std::string("?")) + "; hint: rerun its shard");
  into.push_back(std::move(*rec));
  return Status::Ok();
}

// Reads shard s's recorded units into by_unit (read-only: a running shard may be appending).
Expected<ShardProgress> ReadShardUnits(const CheckedShard& s, std::vector<std::optional<nlohmann::json>>& by_unit) {
  ShardProgress p{s.manifest.shard.index, s.dir, s.manifest.finished, s.manifest.units.size(), 0};
  KV_ASSIGN_OR_RETURN(const std::string path, ShardJournal(s));
  std::vector<nlohmann::json> lines;
  if (!path.empty()) {
    KV_RETURN_IF_ERROR(JsonlJournal::Read(path, s.manifest.journal_kind,
                                          ShardFingerprint(s.manifest.fingerprint, s.manifest.shard), "probe", &lines));
  }
  std::map<std::string, nlohmann::json> by_id;
  for (nlohmann::json& j : lines) {
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) continue;
    const std::string id = j["id"].get<std::string>();  // before the move: `=` evaluates its right side first
    by_id[id] = std::move(j);
  }
  const nlohmann::json ids = s.manifest.summary.value("ids", nlohmann::json::array());
  if (ids.size() != s.manifest.units.size())
    return BadInput(s.dir + "/shard.json: damaged shard manifest; hint: rerun the shard");
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t u = s.manifest.units[k];
    const std::string id = ids[k].is_string() ? ids[k].get<std::string>() : "?";
    if (u < 0 || static_cast<size_t>(u) >= by_unit.size()) {
      return BadInput(s.dir + "/shard.json: probe unit " + std::to_string(u) +
                      " is outside the run; hint: rerun the shard");
    }
    if (!by_id.count(id)) {
      if (!s.manifest.finished) continue;  // not reached yet
      return BadInput(path + ": probe " + id + " of shard " + s.manifest.shard.Text() +
                      " is not recorded; hint: rerun the shard, it resumes from its journal");
    }
    by_unit[static_cast<size_t>(u)] = std::move(by_id[id]);
    ++p.recorded;
  }
  return p;
}

}  // namespace

Expected<MergeResult> MergeProbeShards(const std::vector<CheckedShard>& shards, const MergeScope& scope,
                                       const std::string& out) {
  const ShardManifest& first = shards[0].manifest;
  KV_ASSIGN_OR_RETURN(ProbeRunInfo info, ProbeRunInfoFromJson(first.summary.value("info", nlohmann::json())));
  const nlohmann::json units = first.summary.value("units", nlohmann::json::object());
  const size_t n_inst = units.value("instances", size_t{0}), n_var = units.value("variance", size_t{0});
  const size_t n_units = n_inst + n_var + units.value("drift", size_t{0});
  std::vector<std::optional<nlohmann::json>> by_unit(n_units);  // [n_units] the journal line of each
  MergeResult result;
  int resumed = 0;
  std::vector<ShardProgress> progress;
  for (const CheckedShard& s : shards) {
    KV_ASSIGN_OR_RETURN(ShardProgress p, ReadShardUnits(s, by_unit));
    progress.push_back(std::move(p));
    if (s.manifest.finished) AddShardRun(s.manifest.run, &result, &resumed);
  }
  const size_t n_caches = 1 + info.specs.size();
  std::vector<ProbeRecord> probes;
  std::vector<VarianceRecord> variance;
  std::vector<DriftRecord> drift;
  std::vector<nlohmann::json> lines;
  for (size_t u = 0; u < n_units; ++u) {
    if (!by_unit[u] && scope.partial) continue;
    if (!by_unit[u]) {
      return BadInput("merge: probe unit " + std::to_string(u) +
                      " is in no shard; hint: the shards disagree on the partition, rerun them with one kvaudit");
    }
    const nlohmann::json& line = *by_unit[u];
    if (u < n_inst) {
      KV_RETURN_IF_ERROR(Take(line, n_caches, ProbeRecordFromJson, probes));
    } else if (u < n_inst + n_var) {
      KV_RETURN_IF_ERROR(Take(line, n_caches, VarianceRecordFromJson, variance));
    } else {
      KV_RETURN_IF_ERROR(Take(line, n_caches, DriftRecordFromJson, drift));
    }
    lines.push_back(line);
  }
  if (lines.empty()) {
    return BadInput("merge --partial: no probe unit is recorded yet in the " + std::to_string(shards.size()) +
                    " shards given; hint: wait until a shard has finished a probe");
  }
  if (scope.partial) result.partial = PartialJson(scope, progress, "probe units", lines.size(), n_units);
  info.wall_s = result.wall_s, info.peak_rss_mb = result.peak_rss_mb, info.resumed = resumed;
  KV_ASSIGN_OR_RETURN(const RunDir dir, RunDir::Prepare(out, false));
  KV_RETURN_IF_ERROR(WriteMergedJournal(dir.journal_path(), first.journal_kind, first.fingerprint, lines));
  result.kind = "probe", result.shards = static_cast<int>(shards.size()), result.units = static_cast<int>(lines.size());
  result.results = ProbeResultsJson(info, probes, variance, drift);
  if (scope.partial) result.results["partial"] = result.partial;
  result.table = ProbeResultsTable(info, probes, variance, drift);
  KV_RETURN_IF_ERROR(dir.WriteResults(result.results));
  result.results_path = dir.results_path();
  return result;
}

}  // namespace kvaudit
