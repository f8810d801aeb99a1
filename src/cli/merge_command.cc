// kvaudit merge: the shards of one `--shard I/N` eval or probe run combined into the results the
// unsharded run writes (scale/merge.h; docs/scale-out.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "scale/merge.h"

namespace kvaudit::cli {
namespace {

struct MergeFlags {
  std::vector<std::string> dirs;
  std::string out;
  bool partial = false;
  bool json = false;
};

// "partial: 5 of 8 windows (shards finished 0, 2; unfinished 1; missing 3)" from the partial block.
std::string PartialLine(const nlohmann::json& p) {
  std::map<std::string, std::string> by_state;  // state -> "0, 2"
  for (const auto& s : p["shards"]) {
    std::string& list = by_state[s["state"].get<std::string>()];
    list += (list.empty() ? "" : ", ") + std::to_string(s["index"].get<int>());
  }
  std::string line = "partial: " + std::to_string(p["recorded"].get<size_t>()) + " of " +
                     std::to_string(p["total"].get<size_t>()) + " " + p["unit"].get<std::string>() + " (shards";
  const char* sep = " ";
  for (const char* state : {"finished", "unfinished", "missing"}) {
    if (by_state.count(state)) line += sep + std::string(state) + " " + by_state[state], sep = "; ";
  }
  if (!p["not_started"].empty()) line += "; " + std::to_string(p["not_started"].size()) + " directories not started";
  return line + "); the intervals are over these alone, and gate refuses partial results\n";
}

// What was merged of a staged job's round, and what to run next.
std::string StagedFooter(const MergeResult& done) {
  std::string lines, parts;
  for (const MergeResult& st : done.stages) {
    if (!st.partial.is_null()) lines += st.kind + " " + PartialLine(st.partial);
    parts += (parts.empty() ? "" : ", ") + st.kind + " " + std::to_string(st.units) + " " +
             (st.kind.ends_with("probe") ? "probe units" : "windows");
  }
  lines += "merged " + std::to_string(done.shards) + " " + done.kind + " shards (" +
           (parts.empty() ? "nothing" : parts) + ") -> " + done.results_path;
  if (done.more_rounds) {
    return lines + "; next: run the same shard commands again with --merged " + done.results_path + "\n";
  }
  return lines + "; finish with the same kvaudit " + done.kind + " command without --shard and with --out " +
         done.results_path + "\n";
}

}  // namespace

CommandRunner AddMergeCommand(CLI::App& app) {
  auto f = std::make_shared<MergeFlags>();
  app.add_option("dirs", f->dirs,
                 "the shard directories (each a --shard I/N eval, probe or audit run's --out), every index once")
      ->required();
  app.add_flag("--partial", f->partial,
               "while shards still run: merge what is recorded so far (unfinished, missing and not yet started "
               "shards allowed); results.json says what is in it");
  app.add_option("--out", f->out, "where the merged results.json and progress.jsonl go")->required();
  AddJsonFlag(app, f->json);
  return [f] {
    auto done = MergeShards(f->dirs, f->out, f->partial);
    if (!done) return ReportError(done.error());
    if (!done->stages.empty() || done->kind == "audit" || done->kind == "recommend" || done->kind == "sensitivity") {
      return PrintResults(done->table, done->results, StagedFooter(*done), f->json);
    }
    char footer[256];
    std::snprintf(footer, sizeof footer, "merged %d %s shards (%d %s; %.1f s of shard wall time in all) -> %s\n",
                  done->shards, done->kind.c_str(), done->units, done->kind == "eval" ? "windows" : "probe units",
                  done->wall_s, done->results_path.c_str());
    const std::string partial = done->partial.is_null() ? "" : PartialLine(done->partial);
    return PrintResults(done->table, done->results, partial + footer, f->json);
  };
}

}  // namespace kvaudit::cli
