// kvaudit deploy: how to run one cache configuration in each inference engine, and the KV memory it
// takes there for this model (src/decide/targets/target_settings.h, docs/deployment.md). Reads the model's
// config only; computes nothing.
#include <CLI/CLI.hpp>
#include "base/json_text.h"

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "decide/targets/deploy_report.h"
#include "decide/targets/measure_target.h"
#include "decide/targets/target_settings.h"
#include "model/model.h"
#include "run/model_runtime.h"

namespace kvaudit::cli {
namespace {

struct DeployFlags {
  ModelFlags model;
  std::string kv;
  std::string target;  // "": every engine, the spec as written
  int ctx = 0;
  bool json = false;
};

int RunDeploy(const DeployFlags& f) {
  if (f.kv.empty())
    return ReportError(BadInput("deploy needs --kv SPEC; hint: e.g. kvaudit deploy --kv k=q8_0,v=q4_0"));
  auto cache_config = CacheConfig::FromArgument(f.kv);
  if (!cache_config) return ReportError(cache_config.error());
  const Target* target = nullptr;
  if (!f.target.empty()) {  // the spec as that engine runs it (what audit --target measures), that engine only
    auto named = TargetNamed(f.target);
    if (!named) return ReportError(named.error());
    target = *named;
    cache_config = UnderTarget(*target, *cache_config, "--kv");
    if (!cache_config) return ReportError(cache_config.error());
  }
  auto path = f.model.Resolve();
  if (!path) return ReportError(path.error());
  auto config = LoadModelConfig(*path);
  if (!config) return ReportError(config.error());
  auto ctx = ResolveContext(f.ctx, *config, config->max_ctx, 1);
  if (!ctx) return ReportError(ctx.error());
  auto settings = SettingsFor(*cache_config, *config, *ctx);
  if (!settings) return ReportError(settings.error());
  if (target && target->engine) {
    std::erase_if(*settings, [&](const TargetSettings& t) { return t.target != *target->engine; });
  }
  const DeployContext d{cache_config->spec(), *path, &*config, *ctx};
  if (f.json) {
    std::printf("%s\n", JsonText(DeployJson(d, *settings), 2).c_str());
  } else {
    std::fputs(DeployText(d, *settings).c_str(), stdout);
  }
  return 0;
}

}  // namespace

CommandRunner AddDeployCommand(CLI::App& app) {
  auto f = std::make_shared<DeployFlags>();
  f->model.AddModelOnly(app);
  AddKvFlag(app, f->kv, "the configuration to deploy (required)");
  AddTargetFlag(app, f->target,
                "that engine only, with the spec as it runs it (default: every engine, the spec as written)");
  AddCtxFlag(app, f->ctx, "the target context the memory is for (default: the model's context)");
  AddJsonFlag(app, f->json);
  return [f] { return RunDeploy(*f); };
}

}  // namespace kvaudit::cli
