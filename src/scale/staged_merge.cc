// `kvaudit merge` of a staged job's shards (audit, recommend, sensitivity; docs/scale-out.md
// "Staged jobs"): a round of such a shard holds one eval or probe shard per stage it computed
// (eval/, probe/, recommend/sensitivity/proxy, ...: its manifest's `stages`, the same for every
// shard of the round); each stage is merged by the eval or probe merge into OUT/<stage>, checked as
// a stage (inputs, counts, gaps). Then either the shards run their next round with --merged OUT,
// or (no more rounds) the job's command without --shard and with --out OUT resumes every unit and
// computes the rest.
#include <algorithm>
#include <filesystem>

#include "run/run_dir.h"
#include "scale/merge_parts.h"

namespace kvaudit {

Expected<MergeResult> MergeStagedShards(const std::vector<CheckedShard>& shards, const MergeScope& scope,
                                        const std::string& out) {
  MergeResult result;
  result.kind = shards[0].manifest.kind, result.shards = static_cast<int>(shards.size());
  result.more_rounds = shards[0].manifest.summary.value("more_rounds", false);
  nlohmann::json stage_results = nlohmann::json::object();  // stage -> its merged results.json
  const nlohmann::json stages = shards[0].manifest.summary.value("stages", nlohmann::json::array());
  for (const nlohmann::json& stage_json : stages) {
    const std::string stage = stage_json.is_string() ? stage_json.get<std::string>() : "";
    std::vector<std::string> dirs;  // every shard's stage directory, those not started too (partial)
    for (const CheckedShard& s : shards) dirs.push_back(SubDir(s.dir, stage));
    for (const std::string& d : scope.not_started) dirs.push_back(SubDir(d, stage));
    std::error_code ec;
    bool any_started = false;  // partial: a stage no shard has begun is left out
    for (const std::string& d : dirs) any_started |= std::filesystem::exists(SubDir(d, ShardManifest::kFile), ec);
    if (scope.partial && !any_started) continue;
    KV_ASSIGN_OR_RETURN(MergeResult part, MergeShards(dirs, SubDir(out, stage), scope.partial));
    result.units += part.units;
    result.wall_s += part.wall_s;
    result.peak_rss_mb = std::max(result.peak_rss_mb, part.peak_rss_mb);
    result.table += part.table;
    stage_results[stage] = part.results;
    part.kind = stage;
    result.stages.push_back(std::move(part));
  }
  result.results = {{"kind", result.kind}, {"more_rounds", result.more_rounds}, {"stages", stage_results}};
  result.results_path = out;
  return result;
}

}  // namespace kvaudit
