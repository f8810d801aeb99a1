// The unsharded --budget audit of the bundled model that the scale-out tests compare their merged
// shards with (MergeCliTest and K8sExampleTest run the same job in shards). It costs about a
// minute, so one ctest run computes it once: the fixture test BudgetAuditFixture.Runs
// (tests/CMakeLists.txt, FIXTURES_SETUP budget_audit) writes it into $KVAUDIT_BUDGET_AUDIT, and the
// tests that need it read it there. A test run alone (no ctest, the variable unset) computes its own.
#pragma once

#include <filesystem>
#include <string>

namespace kvaudit::testing {

// The audit's flags after `audit BundledJobFlags()`: small windows, one probe length, a budget so
// that the recommendation's rounds run.
std::string BudgetAuditFlags();

struct FinishedAudit {
  std::filesystem::path dir;
  int exit_code = -1;  // 0, or 1 when a configuration fails the policy (a verdict)
};

// Runs the audit into dir (emptied first) and records its exit code there (dir/exit_code).
FinishedAudit RunBudgetAudit(const std::filesystem::path& dir);

// The shared audit: $KVAUDIT_BUDGET_AUDIT as the fixture left it, or a fresh run when unset.
// Records a gtest failure when the fixture's directory holds no finished audit.
FinishedAudit BudgetAudit();

}  // namespace kvaudit::testing
