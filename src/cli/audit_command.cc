// kvaudit audit: the main job. Is each cache configuration safe for this model and workload, up to
// which context, and what to deploy instead (decide/audit/audit.h; docs/audit.md). Exit 0 when every
// configuration under test passes, 1 when any fails, 2 on bad input.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/endpoint_flags.h"
#include "cli/flags.h"
#include "decide/audit/audit.h"
#include "decide/audit/audit_report.h"
#include "report/report.h"

namespace kvaudit::cli {
namespace {

struct AuditFlags {
  ModelFlags model;
  AuditOptions options;
  std::string shard, merged;
  bool json = false;
};

Expected<AuditResult> RunAuditCommand(AuditFlags& f, std::unique_ptr<AuditPlan>* plan) {
  AuditOptions& o = f.options;
  KV_RETURN_IF_ERROR(ParseStagedShardFlags(f.shard, f.merged, &o.shard));
  o.merged = f.merged;
  KV_RETURN_IF_ERROR(ResolveJobInputs(f.model, o.data, &o.model, &o.threads, &o.data));
  KV_ASSIGN_OR_RETURN(AuditPlan p, AuditPlan::Make(o));
  *plan = std::make_unique<AuditPlan>(std::move(p));
  return RunAudit(**plan);
}

}  // namespace

CommandRunner AddAuditCommand(CLI::App& app) {
  auto f = std::make_shared<AuditFlags>();
  AuditOptions& o = f->options;
  f->model.Add(app);
  AddKvCompareFlags(app, o.kv);
  AddEndpointFlags(app, o.remote);
  AddServeCmdFlags(app, o.serve_cmd, o.serve_timeout_s,
                   "the baseline and each --kv, audit them through its API and stop them");
  app.add_option(
      "--reference", o.reference,
      "the eval's baseline from `kvaudit reference` instead of a baseline run or server (docs/endpoints.md)");
  app.add_option("--top-logprobs", o.top_logprobs,
                 "top logprobs asked per position of an endpoint (>= 5; default 100 when every endpoint is "
                 "llama-server, else 20)");
  AddTargetFlag(app, o.target,
                "default: llama.cpp when every configuration (and --formats candidate) is a llama.cpp cache type, else "
                "native");
  app.add_option("--workload", o.workload,
                 "code, retrieval or chat: the probes run and the default policy (docs/audit.md)")
      ->capture_default_str();
  o.policy.clear();  // "": the workload's preset
  app.add_option("--policy", o.policy,
                 "acceptance policy: a preset (strict, balanced, relative) or a TOML file (default: the workload's; "
                 "docs/decision.md)");
  AddBudgetFlag(app, o.budget, false);
  AddFormatsFlag(app, o.formats,
                 "the recommendation's candidates under --budget (default q8_0,q4_0; under --target vllm or sglang "
                 "their fp8 formats)");
  AddStageFlag(app, o.stage);
  AddDataFlag(app, o.data, "the eval text and the probes' haystack");
  AddCustomFlag(app, o.custom, "they run beside the workload's families and in the recommendation's verification");
  AddCtxFlag(app, o.ctx, "the window length (default: the policy's target_context, else the model's, at most 4096)");
  AddWindowFlags(app, o.windows, o.first_window);
  AddCalibWindowsFlag(app, o.calib_windows);
  AddAttnSamplesFlag(app, o.attn_samples, "the eval's per layer and KV head diagnosis (0 = off)");
  AddProbeSizeFlags(app, o.probe_lengths, o.probe_n, "512, 1024, 2048, 4096, capped at the target context");
  app.add_flag("--bench", o.bench,
               "also measure decode tokens/s per configuration (this engine's speed, not the deployment's)");
  app.add_option("--bench-depth", o.bench_depth, "the depth of --bench's decode steps (default: the target context)")
      ->check(CLI::NonNegativeNumber);
  o.out = "kvaudit-audit";
  AddOutFlags(app, o.out, o.restart, "stages");
  AddJsonFlag(app, f->json);
  AddStagedShardFlags(app, f->shard, f->merged);
  return [f] {
    std::unique_ptr<AuditPlan> plan;
    auto done = RunAuditCommand(*f, &plan);
    if (!done) return ReportError(done.error());
    if (f->options.shard.on()) {  // the verdicts, recommendation and page need every shard: after the merge
      const std::string computed =
          std::to_string(done->shard_windows) + " windows, " + std::to_string(done->shard_probes) + " probe units";
      return PrintStagedShardDone(f->options.shard, done->shard_round, computed, done->wall_s, done->results_path);
    }
    // The page is drawn from the files just written, by the same code as `kvaudit report DIR`.
    const std::string page = (std::filesystem::path(f->options.out) / "report.html").string();
    const Expected<std::string> html = report::RenderReport({{f->options.out}, report::ReportFormat::kHtml});
    if (!html) return ReportError(html.error());
    const Status written = report::WriteReport(*html, page);
    if (!written) return ReportError(written.error());
    const std::string footer =
        RunFooter({done->wall_s, done->peak_rss_mb}, done->results_path) + "report: " + page + "\n";
    PrintResults(AuditText(*done, *plan), done->results, footer, f->json);
    return done->gate.exit_code();
  };
}

}  // namespace kvaudit::cli
