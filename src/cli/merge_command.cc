// kvaudit merge: the shards of one `--shard I/N` eval or probe run combined into the results the
// unsharded run writes (scale/merge.h; docs/scale-out.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "scale/merge.h"

namespace kvaudit::cli {
namespace {

struct MergeFlags {
  std::vector<std::string> dirs;
  std::string out;
  bool json = false;
};

}  // namespace

CommandRunner AddMergeCommand(CLI::App& app) {
  auto f = std::make_shared<MergeFlags>();
  app.add_option("dirs", f->dirs, "the shard directories (each a --shard I/N run's --out), every index once")->required();
  app.add_option("--out", f->out, "where the merged results.json and progress.jsonl go")->required();
  AddJsonFlag(app, f->json);
  return [f] {
    auto done = MergeShards(f->dirs, f->out);
    if (!done) return ReportError(done.error());
    char footer[256];
    std::snprintf(footer, sizeof footer, "merged %d %s shards (%d %s; %.1f s of shard wall time in all) -> %s\n",
                  done->shards, done->kind.c_str(), done->units, done->kind == "eval" ? "windows" : "probe units",
                  done->wall_s, done->results_path.c_str());
    return PrintResults(done->table, done->results, footer, f->json);
  };
}

}  // namespace kvaudit::cli
