// The --kv spec fuzz corpus (tests/fuzz/corpus/kv_spec) replayed as ordinary tests (so also under
// the asan preset): every input, through CacheConfig::FromArgument as the CLI reads it, keeps the
// fuzz target's invariants (tests/fuzz/kv_spec_invariants.h: a clean error, or a configuration that
// round-trips and resolves). Files named bad_* must be rejected by the parser; the others are seeds
// that must parse.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/kv_spec_invariants.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(KvSpecCorpus, EveryInputKeepsTheFuzzInvariants) {
  testing::ReplayCorpus(
      testing::RepoDir() / "tests/fuzz/corpus/kv_spec", [](const std::string&, const std::string& spec) {
        const auto parsed = CacheConfig::FromArgument(spec);
        EXPECT_EQ(fuzz::KvSpecViolation(parsed), "");
        return std::pair(parsed.ok(), "'" + spec + "': " + (parsed.ok() ? parsed->spec() : parsed.error().message));
      });
}

}  // namespace
}  // namespace kvaudit
