#include "report/report_inputs.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/json_text.h"

namespace kvaudit::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kHint = "hint: pass the --out directory of kvaudit audit, eval, probe, recommend or sensitivity";

Expected<json> ReadJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput("report: cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return BadInput("report: " + path.string() + " is not a JSON object; " + kHint);
  }
  return doc;
}

// kind of a results.json; files written before `kind` existed are told apart by their shape.
std::string KindOf(const json& doc) {
  if (doc.contains("kind") && doc["kind"].is_string()) return doc["kind"].get<std::string>();
  if (doc.contains("probes")) return "probe";
  if (doc.contains("configs") && doc.contains("ctx")) return "eval";
  return "";
}

// Loads DIR/relative into slot when it exists; a file of the wrong kind is bad input.
Status LoadOptional(const fs::path& dir, const std::string& relative, const std::string& want,
                    std::optional<ResultsFile>& slot) {
  const fs::path path = dir / relative;
  if (!fs::is_regular_file(path)) return Status::Ok();
  KV_ASSIGN_OR_RETURN(json doc, ReadJson(path));
  if (KindOf(doc) != want) {
    return BadInput("report: " + path.string() + " is a '" + KindOf(doc) + "' result where a '" + want +
                    "' result belongs; " + kHint);
  }
  slot = ResultsFile{relative, std::move(doc)};
  return Status::Ok();
}

std::string StringAt(const json& doc, const char* key, const std::string& fallback) {
  return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : fallback;
}

// An audit's parts: eval/, probe/, recommend/ and recommend's sensitivity/.
Status LoadAuditParts(const fs::path& dir, RunDirectory& d) {
  const json* top = d.audit ? &d.audit->doc : nullptr;
  KV_RETURN_IF_ERROR(
      LoadOptional(dir, top ? StringAt(*top, "eval", "eval/results.json") : "eval/results.json", "eval", d.eval));
  KV_RETURN_IF_ERROR(
      LoadOptional(dir, top ? StringAt(*top, "probe", "probe/results.json") : "probe/results.json", "probe", d.probe));
  KV_RETURN_IF_ERROR(LoadOptional(dir, "recommend/results.json", "recommend", d.recommend));
  KV_RETURN_IF_ERROR(LoadOptional(dir, "recommend/sensitivity/results.json", "sensitivity", d.sensitivity));
  const bool wants_recommend = !top || (top->contains("recommend") && !(*top)["recommend"].is_null());
  if (!d.eval) d.missing.push_back("eval results (eval/results.json) are not there: the eval stage did not finish");
  if (!d.probe) d.missing.push_back("probe results (probe/results.json) are not there: the probe stage did not finish");
  if (wants_recommend && !d.recommend) {
    d.missing.push_back(
        top ? "recommend results (recommend/results.json) are not there"
            : "no recommendation: the recommend stage did not finish, or the audit ran without --budget");
  }
  if (top && !wants_recommend) d.missing.push_back("no recommendation: the audit ran without --budget");
  return Status::Ok();
}

// What a `kvaudit merge --partial` result holds (its "partial" block, docs/results-schema.md).
std::string PartialNote(const json& p) {
  std::string unfinished, missing;
  for (const json& s : p.value("shards", json::array())) {
    const std::string state = s.value("state", "");
    std::string& list = state == "missing" ? missing : unfinished;
    if (state == "finished") continue;
    list += (list.empty() ? "" : ", ") + std::to_string(s.value("index", -1));
  }
  std::string note = "partial merge: " + JsonText(p.value("recorded", json())) + " of " +
                     JsonText(p.value("total", json())) + " " + p.value("unit", std::string("units")) + " of a " +
                     JsonText(p.value("shard_count", json())) + "-shard run";
  if (!unfinished.empty()) note += "; shards still unfinished: " + unfinished;
  if (!missing.empty()) note += "; shards missing: " + missing;
  return note +
         ". The numbers and their intervals are over the recorded units alone; "
         "hint: merge again without --partial once every shard has finished";
}

// A directory without results.json: an interrupted run, or not kvaudit output at all.
Status LoadInterrupted(const fs::path& dir, RunDirectory& d) {
  d.complete = false;
  const bool journal = fs::is_regular_file(dir / "progress.jsonl");
  const bool stages =
      fs::is_directory(dir / "eval") || fs::is_directory(dir / "probe") || fs::is_directory(dir / "recommend");
  if (stages) {
    d.kind = "audit";
    KV_RETURN_IF_ERROR(LoadAuditParts(dir, d));
    d.missing.insert(d.missing.begin(),
                     "the audit did not finish (no results.json): no verdicts; "
                     "hint: rerun the same kvaudit audit command to resume it");
    return Status::Ok();
  }
  if (journal) {
    d.kind = "interrupted";
    d.missing.push_back(
        "the run did not finish (progress.jsonl but no results.json): nothing to show yet; "
        "hint: rerun the same command to resume it");
    return Status::Ok();
  }
  return BadInput("report: " + d.path + " is not a kvaudit output directory (no results.json, no progress.jsonl); " +
                  kHint);
}

Status LoadComplete(const fs::path& dir, RunDirectory& d) {
  KV_ASSIGN_OR_RETURN(json doc, ReadJson(dir / "results.json"));
  d.kind = KindOf(doc);
  ResultsFile top{"results.json", std::move(doc)};
  if (d.kind == "audit") {
    d.audit = std::move(top);
    return LoadAuditParts(dir, d);
  }
  if (d.kind == "eval") {
    d.eval = std::move(top);
    d.missing.push_back("no probe results: this is an eval run; hint: kvaudit audit runs eval and probes together");
  } else if (d.kind == "probe") {
    d.probe = std::move(top);
    d.missing.push_back("no eval results: this is a probe run; hint: kvaudit audit runs eval and probes together");
  } else if (d.kind == "recommend" && top.doc.value("search", "") == "servers") {
    return BadInput("report: " + d.path +
                    " is a search through servers (recommend --serve-cmd): its table is its results.json and the "
                    "command's output, and each measured candidate's runs are under candidates/; hint: kvaudit "
                    "report " +
                    (dir / "candidates" / "SPEC" / "eval").string() + " " +
                    (dir / "candidates" / "SPEC" / "probe").string() + " --out FILE");
  } else if (d.kind == "recommend") {
    d.recommend = std::move(top);
    KV_RETURN_IF_ERROR(LoadOptional(dir, "sensitivity/results.json", "sensitivity", d.sensitivity));
  } else if (d.kind == "sensitivity") {
    d.sensitivity = std::move(top);
  } else {
    return BadInput("report: " + (dir / "results.json").string() + " has kind '" + d.kind +
                    "', which kvaudit report does not know; " + kHint);
  }
  if (d.kind != "audit") {
    d.missing.push_back("no policy verdicts of an audit; hint: kvaudit audit (or kvaudit gate --results DIR)");
  }
  for (const auto* f : {&d.eval, &d.probe}) {
    if (*f && (*f)->doc.contains("partial")) d.missing.insert(d.missing.begin(), PartialNote((*f)->doc["partial"]));
  }
  return Status::Ok();
}

}  // namespace

Expected<RunDirectory> LoadRunDirectory(const std::string& path, int index) {
  RunDirectory d;
  d.index = index, d.path = path;
  const fs::path dir(path);
  if (!fs::is_directory(dir)) {
    return BadInput("report: " + path + " is not a directory; " + std::string(kHint));
  }
  if (fs::is_regular_file(dir / "results.json")) {
    KV_RETURN_IF_ERROR(LoadComplete(dir, d));
  } else {
    KV_RETURN_IF_ERROR(LoadInterrupted(dir, d));
  }
  return d;
}

void LabelRunDirectories(std::vector<RunDirectory>& dirs) {
  std::set<std::string> seen;
  for (RunDirectory& d : dirs) {
    std::string name = fs::path(d.path).lexically_normal().filename().string();
    if (name.empty() || name == ".") name = fs::path(d.path).lexically_normal().parent_path().filename().string();
    if (name.empty()) name = "run";
    if (!seen.insert(name).second) name += "#" + std::to_string(d.index + 1);
    seen.insert(name);
    d.label = name;
  }
}

}  // namespace kvaudit::report
