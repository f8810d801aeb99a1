// The fixture of the scale-out tests (support/budget_audit.h): the unsharded --budget audit of the
// bundled model, once per ctest run, into $KVAUDIT_BUDGET_AUDIT.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "support/budget_audit.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(BudgetAuditFixture, Runs) {
  // Outside ctest (the variable unset) it runs into a fresh directory: the same audit, checked the same.
  const char* env = std::getenv("KVAUDIT_BUDGET_AUDIT");
  const std::filesystem::path dir = env != nullptr && *env != '\0' ? env : testing::MakeTempDir("budget-audit");
  const testing::FinishedAudit a = testing::RunBudgetAudit(dir);
  EXPECT_LE(a.exit_code, 1);
  EXPECT_TRUE(std::filesystem::exists(a.dir / "results.json"));
  EXPECT_TRUE(std::filesystem::exists(a.dir / "gate.xml"));
}

}  // namespace
}  // namespace kvaudit
