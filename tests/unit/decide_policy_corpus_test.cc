// The acceptance policy fuzz corpus (tests/fuzz/corpus/policy) replayed as ordinary tests (so also
// under the asan preset): every input keeps the fuzz target's invariants
// (tests/fuzz/policy_invariants.h). Files named bad_* must be rejected; the others must parse.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/policy_invariants.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(DecidePolicyCorpus, EveryInputKeepsTheFuzzInvariants) {
  int accepted = 0, rejected = 0;
  for (const auto& p : testing::FilesIn(testing::RepoDir() / "tests/fuzz/corpus/policy")) {
    SCOPED_TRACE(p.filename().string());
    const std::vector<uint8_t> bytes = testing::ReadBytes(p);
    const std::string text(bytes.begin(), bytes.end());
    const std::string source = p.filename().string();
    const auto parsed = ParsePolicy(text, source);
    EXPECT_EQ(fuzz::PolicyViolation(parsed, source), "");
    const bool bad = source.rfind("bad_", 0) == 0;
    EXPECT_EQ(parsed.ok(), !bad) << (parsed.ok() ? "accepted" : parsed.error().message);
    ++(parsed.ok() ? accepted : rejected);
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace kvaudit
