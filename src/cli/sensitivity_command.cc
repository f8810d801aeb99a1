// kvaudit sensitivity: how much each layer's K and V contributes to a candidate format's error
// (the plan and session: decide/sensitivity/sensitivity.h; method docs/decision.md "Sensitivity"; output
// docs/results-schema.md).
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "decide/sensitivity/sensitivity.h"
#include "decide/sensitivity/sensitivity_report.h"

namespace kvaudit::cli {
namespace {

struct SensitivityFlags {
  ModelFlags model;
  SensitivityOptions options;
  std::string shard;
  bool json = false;
};

Expected<SensitivityResult> RunSensitivity(SensitivityFlags& f) {
  SensitivityOptions& o = f.options;
  KV_RETURN_IF_ERROR(ParseStagedShardFlags(f.shard, o.merged, &o.shard));
  KV_RETURN_IF_ERROR(ResolveJobInputs(f.model, o.data, &o.model, &o.threads, &o.data));
  KV_ASSIGN_OR_RETURN(SensitivityPlan plan, SensitivityPlan::Make(f.options));
  return SensitivitySession(plan).Run();
}

}  // namespace

CommandRunner AddSensitivityCommand(CLI::App& app) {
  auto f = std::make_shared<SensitivityFlags>();
  SensitivityOptions& o = f->options;
  f->model.Add(app);
  AddFormatsFlag(app, o.formats, "each is measured part by part against --baseline");
  AddTargetFlag(app, o.target, "default: llama.cpp when every candidate is a llama.cpp cache type, else native");
  AddBaselineFlags(app, o.kv);
  AddStageFlag(app, o.stage);
  AddDataFlag(app, o.data, "the calibration text");
  AddCtxFlag(app, o.ctx, "the window length (default: the model's context, at most 4096)");
  AddWindowFlags(app, o.windows, o.first_window);
  AddAttnSamplesFlag(app, o.attn_samples, "the proxy's diagnosis (at least 1)");
  o.out = "kvaudit-sensitivity";
  AddOutFlags(app, o.out, o.restart, "windows");
  AddJsonFlag(app, f->json);
  AddStagedShardFlags(app, f->shard, o.merged);
  return [f] {
    auto done = RunSensitivity(*f);
    if (!done) return ReportError(done.error());
    if (f->options.shard.on()) {  // the parts stage and the results need every window: after the merge
      return PrintStagedShardDone(f->options.shard, done->shard_round, std::to_string(done->shard_windows) + " windows",
                                  done->wall_s, done->results_path);
    }
    const int resumed = done->windows_resumed_proxy + done->windows_resumed_parts;
    const int total = done->eval.n_windows * (done->parts_results.empty() ? 1 : 2);
    return PrintResults(
        SensitivityTable(*done), done->results,
        RunFooter({done->wall_s, done->peak_rss_mb}, resumed, total, "stage windows", done->results_path), f->json);
  };
}

}  // namespace kvaudit::cli
