// kvaudit gate: eval and probe results judged by an acceptance policy, exit 0 when every
// configuration passes, 1 when any fails, 2 on bad input (decide/gate/gate_run.h; docs/decision.md "Gate").
#include <CLI/CLI.hpp>
#include "base/json_text.h"

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "decide/gate/deployment_check.h"
#include "decide/gate/gate_run.h"
#include "decide/gate/gate_text.h"

namespace kvaudit::cli {
namespace {

struct GateFlags {
  GateOptions options;
  DeploymentCheckOptions deployment;
  bool json = false;
};

// --endpoint: whether each server runs the configuration the audit says to deploy (or --config).
int RunDeploymentCheck(GateFlags& f) {
  DeploymentCheckOptions& d = f.deployment;
  d.results = f.options.results, d.model = f.options.model;
  const auto checks = CheckDeployments(d);
  if (!checks) return ReportError(checks.error());
  int failed = 0;
  nlohmann::json j = nlohmann::json::array();
  for (const DeploymentCheck& c : *checks) {
    failed += c.pass ? 0 : 1;
    if (!f.json) std::printf("%s\n", c.line.c_str());
    j.push_back({{"endpoint", c.endpoint},
                 {"expected", c.expected},
                 {"nearest", c.match.nearest},
                 {"nearest_distance", c.match.nearest_distance},
                 {"expected_distance", c.match.expected_distance.value_or(0)},
                 {"positions", c.positions},
                 {"pass", c.pass},
                 {"reported_cache", c.reported ? c.reported->ToJson() : nlohmann::json(nullptr)},
                 {"line", c.line}});
  }
  if (f.json) std::printf("%s\n", JsonText(nlohmann::json{{"deployments", j}}, 2).c_str());
  return failed > 0 ? 1 : 0;
}

}  // namespace

CommandRunner AddGateCommand(CLI::App& app) {
  auto f = std::make_shared<GateFlags>();
  GateOptions& o = f->options;
  AddResultsFlag(app, o.results);
  app.add_option("--policy", o.policy,
                 "acceptance policy: a preset (strict, balanced, relative) or a TOML file (docs/decision.md); "
                 "default: the one the --results audit directories recorded");
  AddModelCheckFlag(app, o.model);
  AddJunitFlag(app, o.junit);
  AddMarkdownFlag(app, o.markdown);
  AddJsonFlag(app, f->json);
  app.add_option("--endpoint", f->deployment.remote.endpoints,
                 "instead of judging results: check that this deployed server runs the audited configuration "
                 "(the audit's deploy choice, or --config), [NAME=]http://HOST:PORT; repeatable");
  app.add_option("--config", f->deployment.config,
                 "with --endpoint: the configuration the server should run (default: the audit's deploy choice)");
  app.add_option("--dialect", f->deployment.remote.dialect,
                 "with --endpoint: auto, kvaudit, vllm, llama-server, openai")
      ->capture_default_str();
  return [f] {
    if (!f->deployment.remote.endpoints.empty()) return RunDeploymentCheck(*f);
    const auto report = RunGate(f->options);
    if (!report) return ReportError(report.error());
    const std::string out = f->json ? JsonText(GateJson(*report), 2) + "\n" : GateVerdictText(*report);
    std::fputs(out.c_str(), stdout);
    return report->exit_code();
  };
}

}  // namespace kvaudit::cli
