// The custom probe JSONL fuzz corpus (tests/fuzz/corpus/probe_jsonl, lines in the format of
// docs/probes.md "Custom probes") replayed as ordinary tests (so also under the asan preset):
// every file keeps the fuzz target's invariants (tests/fuzz/probe_jsonl_invariants.h). valid_*
// files parse into probes; bad_* files give one BadInput error (exit 2) listing problems, never a
// crash.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/probe_jsonl_invariants.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(ProbeCustomCorpus, ValidFilesParseAndMalformedOnesAreCleanErrors) {
  int valid = 0, bad = 0;
  for (const auto& p : testing::FilesIn(testing::RepoDir() / "tests/fuzz/corpus/probe_jsonl")) {
    const std::string name = p.filename().string();
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = testing::ReadBytes(p);
    const auto probes = ParseCustomProbes(std::string(bytes.begin(), bytes.end()), name);
    EXPECT_EQ(fuzz::ProbeJsonlViolation(probes, name), "");
    if (name.rfind("valid_", 0) == 0) {
      ++valid;
      ASSERT_TRUE(probes.ok()) << probes.error().message;
      EXPECT_FALSE(probes->empty());
    } else {
      ++bad;
      ASSERT_EQ(name.rfind("bad_", 0), 0u) << "corpus files are named valid_* or bad_*";
      ASSERT_FALSE(probes.ok()) << probes->size() << " probes from a malformed file";
      EXPECT_NE(probes.error().message.find(name + ":"), std::string::npos) << probes.error().message;  // where
    }
  }
  EXPECT_GT(valid, 0);
  EXPECT_GT(bad, 0);
}

}  // namespace
}  // namespace kvaudit
