#include "support/budget_audit.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit::testing {

std::string BudgetAuditFlags() {
  return "--ctx 256 --windows 2 --calib-windows 2 --lengths 256 --attn-samples 4 --budget 1800";
}

FinishedAudit RunBudgetAudit(const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);  // a fresh run, as the sharded jobs compared with it are
  const CliResult r = RunCli("audit " + BundledJobFlags() + BudgetAuditFlags() + " --out " + dir.string(), 300);
  EXPECT_LE(r.exit_code, 1) << r.err;  // 1: a configuration fails the policy (a verdict)
  std::ofstream(dir / "exit_code") << r.exit_code;
  return {dir, r.exit_code};
}

FinishedAudit BudgetAudit() {
  const char* env = std::getenv("KVAUDIT_BUDGET_AUDIT");
  if (env == nullptr || *env == '\0') return RunBudgetAudit(MakeTempDir("budget-audit"));
  FinishedAudit a{env, -1};
  std::ifstream in(a.dir / "exit_code");
  if (!(in >> a.exit_code) || !std::filesystem::exists(a.dir / "results.json")) {
    ADD_FAILURE() << a.dir
                  << " holds no finished audit (BudgetAuditFixture.Runs writes it; run the test through ctest)";
  }
  return a;
}

}  // namespace kvaudit::testing
