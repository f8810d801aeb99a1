#include "scale/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "base/json_text.h"
#include "run/jsonl_journal.h"
#include "run/run_dir.h"
#include "scale/merge_parts.h"

namespace kvaudit {
namespace {

constexpr const char* kHint =
    "; hint: merge the shards of one run (same model, data, --kv, seeds, kvaudit version), each once";

// What must agree across the shards of one run: the fingerprint without the shard, the job, the
// version (a newer kvaudit may compute other numbers from the same records) and the summary
// inputs, which hold what the journal's fingerprint leaves out because a rerun recomputes it
// (--windows, --bootstrap, --kld-threshold, --buckets); not the threads, nor a shard's own ids.
nlohmann::json RunKey(const ShardManifest& m) {
  nlohmann::json key = m.fingerprint;
  key["kind"] = m.kind, key["kvaudit_version"] = m.kvaudit_version;
  nlohmann::json summary = m.summary;
  summary.erase("ids");
  if (summary.contains("info") && summary["info"].is_object()) summary["info"].erase("threads");
  key["summary"] = std::move(summary);
  return key;
}

std::string IndexList(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s.empty() ? "none" : s;
}

// The stages a staged job's round computed ("" for an eval or probe shard).
std::string StagesText(const ShardManifest& m) {
  std::string s;
  for (const auto& st : m.summary.value("stages", nlohmann::json::array())) s += (s.empty() ? "" : ", ") + JsonText(st);
  return s.empty() ? "none" : s;
}

Status CheckSameRun(const std::vector<CheckedShard>& all) {
  const CheckedShard& a = all[0];
  for (const CheckedShard& b : all) {
    nlohmann::json ka = RunKey(a.manifest), kb = RunKey(b.manifest);
    if (ka != kb && ka.contains("stages") && kb.contains("stages")) {  // the key holds the fingerprint's entries
      for (nlohmann::json* k : {&ka, &kb})
        k->erase("stages"), (*k)["summary"].erase("stages"), (*k)["summary"].erase("more_rounds");
      if (ka == kb) {  // a staged job's shards at different rounds
        return BadInput("merge: " + a.dir + " ran the stages " + StagesText(a.manifest) + " but " + b.dir + " ran " +
                        StagesText(b.manifest) +
                        " (the shards are at different rounds); hint: run every shard's "
                        "round with the same --merged, then merge them");
      }
    }
    if (RunKey(b.manifest) != RunKey(a.manifest)) {
      return BadInput("merge: " + a.dir + " and " + b.dir + " come from different runs (" +
                      JsonlJournal::ChangedKeys(RunKey(a.manifest), RunKey(b.manifest)) + " differ)" + kHint);
    }
    if (b.manifest.shard.count != a.manifest.shard.count) {
      return BadInput("merge: " + a.dir + " is shard " + a.manifest.shard.Text() + " but " + b.dir + " is shard " +
                      b.manifest.shard.Text() + " (the shard count differs)" + kHint);
    }
  }
  return Status::Ok();
}

// Each index once, none missing (partial: missing ones go to scope->missing); returns the shards
// ascending by index.
Expected<std::vector<CheckedShard>> CheckIndexes(std::vector<CheckedShard> all, MergeScope* scope) {
  const int count = all[0].manifest.shard.count;
  std::map<int, std::string> seen;
  for (const CheckedShard& s : all) {
    const int i = s.manifest.shard.index;
    if (seen.count(i)) {
      return BadInput("merge: shard " + s.manifest.shard.Text() + " given twice (" + seen[i] + " and " + s.dir +
                      "); hint: pass each shard's directory once");
    }
    seen[i] = s.dir;
  }
  std::vector<int> missing, given;
  for (int i = 0; i < count; ++i) (seen.count(i) ? given : missing).push_back(i);
  scope->count = count, scope->missing = missing;
  if (!missing.empty() && !scope->partial) {
    return BadInput("merge: shard" + std::string(missing.size() > 1 ? "s " : " ") + IndexList(missing) + " of " +
                    std::to_string(count) + " missing (given: " + IndexList(given) + "); hint: run --shard " +
                    std::to_string(missing[0]) + "/" + std::to_string(count) +
                    " and pass its directory, or merge --partial for what has finished so far");
  }
  std::sort(all.begin(), all.end(), [](const CheckedShard& a, const CheckedShard& b) {
    return a.manifest.shard.index < b.manifest.shard.index;
  });
  return all;
}

}  // namespace

Expected<std::string> ShardJournal(const CheckedShard& s) {
  const std::string path = SubDir(s.dir, "progress.jsonl");
  if (!std::filesystem::exists(path) && !s.manifest.finished) return std::string();  // started, nothing recorded yet
  if (!std::filesystem::exists(path)) {
    return BadInput(path + ": missing (shard " + s.manifest.shard.Text() +
                    " has its manifest but no journal); hint: rerun the shard");
  }
  return path;
}

Status WriteMergedJournal(const std::string& path, const std::string& kind, const nlohmann::json& fingerprint,
                          const std::vector<nlohmann::json>& records) {
  std::string text = JsonText(nlohmann::json({{kind, 1}, {"fingerprint", fingerprint}})) + "\n";
  for (const nlohmann::json& r : records) text += JsonText(r) + "\n";
  return WriteFileAtomically(path, text);
}

void AddShardRun(const nlohmann::json& run, MergeResult* out, int* resumed) {
  out->wall_s += run.value("wall_s", 0.0);
  out->peak_rss_mb = std::max(out->peak_rss_mb, run.value("peak_rss_mb", 0.0));
  *resumed += run.value("resumed", 0);
}

nlohmann::json PartialJson(const MergeScope& scope, const std::vector<ShardProgress>& shards, const std::string& unit,
                           size_t recorded, size_t total) {
  nlohmann::json per_shard = nlohmann::json::array();  // [count] by index
  size_t next = 0;
  for (int i = 0; i < scope.count; ++i) {
    if (next < shards.size() && shards[next].index == i) {
      const ShardProgress& s = shards[next++];
      per_shard.push_back({{"index", i},
                           {"state", s.finished ? "finished" : "unfinished"},
                           {"dir", s.dir},
                           {"owned", s.owned},
                           {"recorded", s.recorded}});
    } else {
      per_shard.push_back({{"index", i}, {"state", "missing"}});
    }
  }
  return {{"unit", unit},        {"recorded", recorded},
          {"total", total},      {"shard_count", scope.count},
          {"shards", per_shard}, {"not_started", scope.not_started}};
}

Expected<MergeResult> MergeShards(const std::vector<std::string>& dirs, const std::string& out, bool partial) {
  if (dirs.empty()) return BadInput("merge: no shard directory given; hint: kvaudit merge DIR... --out DIR");
  MergeScope scope;
  scope.partial = partial;
  std::vector<CheckedShard> all;
  for (const std::string& d : dirs) {
    std::error_code ec;  // merging into a shard would replace that shard's journal
    if (std::filesystem::equivalent(d, out, ec)) {
      return BadInput("merge: --out " + out + " is the shard directory " + d + "; hint: merge into a new directory");
    }
    if (partial && !std::filesystem::exists(SubDir(d, ShardManifest::kFile), ec)) {
      scope.not_started.push_back(d);  // its index is not known until it writes its manifest
      continue;
    }
    KV_ASSIGN_OR_RETURN(ShardManifest m, ReadShardManifest(d));
    if (!m.finished && !partial) {
      return BadInput("merge: " + d + " is shard " + m.shard.Text() +
                      ", which has not finished; hint: wait for it, or rerun it (it resumes from its journal), or "
                      "merge --partial for what has finished so far");
    }
    all.push_back({d, std::move(m)});
  }
  if (all.empty()) {
    return BadInput("merge --partial: no shard has started (none of the " + std::to_string(dirs.size()) +
                    " directories has a shard.json); hint: wait until a shard has begun");
  }
  KV_RETURN_IF_ERROR(CheckSameRun(all));
  KV_ASSIGN_OR_RETURN(all, CheckIndexes(std::move(all), &scope));
  if (all[0].manifest.kind == "eval") return MergeEvalShards(all, scope, out);
  if (all[0].manifest.kind == "probe") return MergeProbeShards(all, scope, out);
  const std::string& kind = all[0].manifest.kind;
  if (kind == "audit" || kind == "recommend" || kind == "sensitivity") return MergeStagedShards(all, scope, out);
  return BadInput(SubDir(all[0].dir, ShardManifest::kFile) + ": a shard of '" + all[0].manifest.kind +
                  "', which merge does not know; hint: merge eval, probe, sensitivity, recommend or audit shards");
}

}  // namespace kvaudit
