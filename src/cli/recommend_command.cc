// kvaudit recommend: under a memory budget, the cheapest cache configuration (a per-layer mix, and
// the best uniform one) that passes an acceptance policy, verified on held-out data, with each
// engine's settings (decide/recommend/recommend.h; docs/decision.md "Recommend"). With --serve-cmd,
// the cheapest of the engine's own settings, measured through servers it starts
// (decide/audit/served_search.h). Exit 0 with a recommendation, 1 when nothing under the budget
// passes, 2 on bad input.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/endpoint_flags.h"
#include "cli/flags.h"
#include "decide/audit/served_search.h"
#include "decide/audit/served_search_report.h"
#include "decide/recommend/recommend.h"
#include "decide/recommend/recommend_report.h"

namespace kvaudit::cli {
namespace {

struct RecommendFlags {
  ModelFlags model;
  RecommendOptions options;
  std::string shard;
  bool json = false;
};

void AddRecommendFlags(CLI::App& app, RecommendOptions& o) {
  AddBudgetFlag(app, o.budget, true);
  AddFormatsFlag(
      app, o.formats,
      "what each part may be stored as (default q8_0,q4_0; under --target vllm or sglang their fp8 formats)");
  AddPolicyFlag(app, o.policy);
  AddTargetFlag(app, o.target, "default: llama.cpp when every candidate is a llama.cpp cache type, else native");
  AddBaselineFlags(app, o.kv);
  AddDataFlag(app, o.data, "the calibration and held-out text");
  AddCustomFlag(app, o.custom, "the verification runs them too");
  AddCtxFlag(app, o.ctx, "the window length (default: the policy's target_context, else the model's, at most 4096)");
  AddCalibWindowsFlag(app, o.calib_windows);
  app.add_option("--windows", o.windows,
                 "held-out windows where the candidates are verified, right after the calibration ones")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--first-window", o.first_window, "the first calibration window (0-based)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddStageFlag(app, o.stage);
  app.add_option("--verify-points", o.verify_points, "per-layer front points verified under the budget")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  AddProbeSizeFlags(app, o.probe_lengths, o.probe_n, "512, 1024, 2048, 4096, capped at the target context");
}

void AddServedSearchFlags(CLI::App& app, RecommendOptions& o) {
  AddServeCmdFlags(app, o.serve_cmd, o.serve_timeout_s,
                   "the baseline and each --formats pair (no {v}: one type for K and V), cheapest first, and "
                   "search the engine's own settings instead of per-layer mixes");
  app.add_option("--max-servers", o.max_servers, "with --serve-cmd: candidates measured at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--search-time", o.search_time_s,
                 "with --serve-cmd: seconds after which no candidate's server is started (default: no limit)")
      ->check(CLI::Range(1.0, 30.0 * 86400.0));
}

// The flags only one of the two searches reads, given to the other: one line naming them.
Status CheckSearchFlags(const CLI::App& app, const RecommendOptions& o) {
  const std::vector<std::string> in_process = {"--calib-windows", "--stage", "--verify-points", "--shard", "--merged"};
  const std::vector<std::string> served = {"--serve-timeout", "--max-servers", "--search-time"};
  for (const std::string& flag : o.serve_cmd.empty() ? served : in_process) {
    if (app.count(flag) == 0) continue;
    if (o.serve_cmd.empty()) return BadInput(flag + " bounds the search through servers; hint: give --serve-cmd");
    return BadInput(flag +
                    " belongs to the per-layer search in process, not the search through servers "
                    "(--serve-cmd); hint: drop one of them");
  }
  return Status::Ok();
}

int RunServed(const RecommendOptions& o, bool json) {
  auto plan = ServedSearchPlan::Make(o);
  if (!plan) return ReportError(plan.error());
  auto done = RunServedSearch(*plan);
  if (!done) return ReportError(done.error());
  const std::string footer = RunFooter({done->wall_s, done->peak_rss_mb}, done->results_path);
  PrintResults(ServedSearchText(*done, *plan), done->results, footer, json);
  return done->recommended ? 0 : 1;
}

}  // namespace

CommandRunner AddRecommendCommand(CLI::App& app) {
  auto f = std::make_shared<RecommendFlags>();
  RecommendOptions& o = f->options;
  f->model.Add(app);
  o.out = "kvaudit-recommend";
  AddRecommendFlags(app, o);
  AddServedSearchFlags(app, o);
  AddOutFlags(app, o.out, o.restart, "stages");
  AddJsonFlag(app, f->json);
  AddStagedShardFlags(app, f->shard, o.merged);
  return [f, &app] {
    RecommendOptions& o = f->options;
    if (auto s = CheckSearchFlags(app, o); !s) return ReportError(s.error());
    if (auto s = ParseStagedShardFlags(f->shard, o.merged, &o.shard); !s) return ReportError(s.error());
    if (auto s = ResolveJobInputs(f->model, o.data, &o.model, &o.threads, &o.data); !s) return ReportError(s.error());
    if (!o.serve_cmd.empty()) return RunServed(o, f->json);
    auto plan = RecommendPlan::Make(o);
    if (!plan) return ReportError(plan.error());
    auto done = RunRecommend(*plan);
    if (!done) return ReportError(done.error());
    if (o.shard.on()) {  // the search and the verification need every part: after the merge
      const std::string computed =
          std::to_string(done->shard_windows) + " windows, " + std::to_string(done->shard_probes) + " probe units";
      return PrintStagedShardDone(o.shard, done->shard_round, computed, done->wall_s, done->results_path);
    }
    const std::string footer = RunFooter({done->wall_s, done->peak_rss_mb}, done->results_path);
    PrintResults(RecommendText(*done, *plan), done->results, footer, f->json);
    return done->recommended ? 0 : 1;
  };
}

}  // namespace kvaudit::cli
