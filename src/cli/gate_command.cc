// kvaudit gate: eval and probe results judged by an acceptance policy, exit 0 when every
// configuration passes, 1 when any fails, 2 on bad input (decide/gate/gate_run.h; docs/decision.md "Gate").
#include <CLI/CLI.hpp>
#include "base/json_text.h"

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "decide/gate/gate_run.h"
#include "decide/gate/gate_text.h"

namespace kvaudit::cli {
namespace {

struct GateFlags {
  GateOptions options;
  bool json = false;
};

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
  return [f] {
    const auto report = RunGate(f->options);
    if (!report) return ReportError(report.error());
    const std::string out = f->json ? JsonText(GateJson(*report), 2) + "\n" : GateVerdictText(*report);
    std::fputs(out.c_str(), stdout);
    return report->exit_code();
  };
}

}  // namespace kvaudit::cli
