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
  testing::ReplayCorpus(testing::RepoDir() / "tests/fuzz/corpus/policy",
                        [](const std::string& name, const std::string& text) {
                          const auto parsed = ParsePolicy(text, name);
                          EXPECT_EQ(fuzz::PolicyViolation(parsed, name), "");
                          return std::pair(parsed.ok(), parsed.ok() ? std::string("a policy") : parsed.error().message);
                        });
}

}  // namespace
}  // namespace kvaudit
