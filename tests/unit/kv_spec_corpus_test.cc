// The --kv spec fuzz corpus (tests/fuzz/corpus/kv_spec) replayed as ordinary tests (so also under
// the asan preset): every input, through CachePolicy::FromArgument as the CLI reads it, keeps the
// fuzz target's invariants (tests/fuzz/kv_spec_invariants.h: a clean error, or a policy that
// round-trips and resolves). Files named bad_* must be rejected by the parser; the others are seeds
// that must parse.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/kv_spec_invariants.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(KvSpecCorpus, EveryInputKeepsTheFuzzInvariants) {
  int accepted = 0, rejected = 0;
  for (const auto& p : testing::FilesIn(testing::RepoDir() / "tests/fuzz/corpus/kv_spec")) {
    SCOPED_TRACE(p.filename().string());
    const std::vector<uint8_t> bytes = testing::ReadBytes(p);
    const std::string spec(bytes.begin(), bytes.end());
    const auto parsed = CachePolicy::FromArgument(spec);
    EXPECT_EQ(fuzz::KvSpecViolation(parsed), "");
    const bool bad = p.filename().string().rfind("bad_", 0) == 0;
    EXPECT_EQ(parsed.ok(), !bad) << "'" << spec << "': " << (parsed.ok() ? parsed->spec() : parsed.error().message);
    ++(parsed.ok() ? accepted : rejected);
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace kvaudit
