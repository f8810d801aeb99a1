// An audit judged relative to llama.cpp's q8_0 cache, end to end on the bundled model
// (docs/decision.md "Relative to a reference"): the audit measures the reference itself, under the
// target's engine, once; the verdict block, results.json and gate name it; the reference passes
// against itself and q4_0 (ten times q8_0's KLD on this model) fails against it; the gate over the
// audit's directory gives the same verdicts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string AuditArgs(const fs::path& out) {
  return "audit --model " + testing::BundledModelDir().string() + " --threads 2 --data " +
         (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
         " --ctx 256 --windows 2 --lengths 128 --attn-samples 0 --out " + out.string() + " ";
}

json Results(const fs::path& dir) {
  const json j = json::parse(testing::ReadFile((dir / "results.json").string()), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << dir;
  return j;
}

TEST(AuditRelativeTest, TheAuditMeasuresTheReferenceUnderItsTargetAndJudgesAgainstIt) {
  const fs::path dir = testing::MakeTempDir("audit-relative");
  const auto r = testing::RunCli(AuditArgs(dir / "run") + "--kv k=q4_0,v=q4_0 --policy relative", 300);
  ASSERT_EQ(r.exit_code, 1) << r.err;  // q4_0 fails
  constexpr const char* kRef = "k=q8_0,v=q8_0,engine=llama.cpp";
  EXPECT_NE(r.out.find(std::string("policy relative (relative to ") + kRef + ")"), std::string::npos) << r.out;
  const json j = Results(dir / "run");
  EXPECT_EQ(j["relative_to"], kRef);
  ASSERT_EQ(j["configs"].size(), 2u) << j["configs"].dump();
  EXPECT_EQ(j["configs"][0]["spec"], "k=q4_0,v=q4_0,engine=llama.cpp");
  EXPECT_EQ(j["configs"][1]["spec"], kRef);
  EXPECT_EQ(j["configs"][1]["verdict"], "PASS") << j["configs"][1].dump();
  EXPECT_EQ(j["configs"][0]["verdict"], "FAIL");
  const std::string first = j["configs"][0]["first_failure"];
  EXPECT_EQ(first.rfind("kld_mean ", 0), 0u) << first;
  EXPECT_NE(first.find("(kld_mean.relative_to), context 1-"), std::string::npos) << first;
  EXPECT_NE(first.find(std::string("; ") + kRef + ": "), std::string::npos) << first;

  // The gate over the audit's directory: the same verdicts, the reference named.
  const auto gate = testing::RunCli("gate --results " + (dir / "run").string() + " --policy relative --json");
  ASSERT_EQ(gate.exit_code, 1) << gate.err;
  const json g = json::parse(gate.out, nullptr, false);
  ASSERT_FALSE(g.is_discarded()) << gate.out;
  EXPECT_EQ(g["relative_to"], kRef);
  ASSERT_EQ(g["configs"].size(), 2u);
  EXPECT_EQ(g["configs"][0]["verdict"], "FAIL");
  EXPECT_EQ(g["configs"][1]["verdict"], "PASS");

  // A reference among the --kv configurations is measured once; a file can add the comparison to
  // a preset's thresholds, each its own case.
  std::ofstream(dir / "strict-and-q8.toml") << "extends = \"strict\"\nrelative_to = \"k=q8_0,v=q8_0\"\n";
  const auto both = testing::RunCli(AuditArgs(dir / "both") + "--kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --policy " +
                                        (dir / "strict-and-q8.toml").string(),
                                    300);
  ASSERT_EQ(both.exit_code, 1) << both.err;
  const json b = Results(dir / "both");
  ASSERT_EQ(b["configs"].size(), 2u) << b["configs"].dump();
  EXPECT_EQ(b["relative_to"], kRef);
  const std::string xml = testing::ReadFile((dir / "both" / "gate.xml").string());
  EXPECT_NE(xml.find("name=\"kld_mean_max context 1-"), std::string::npos);
  EXPECT_NE(xml.find("name=\"kld_mean.relative_to context 1-"), std::string::npos);
  fs::remove_all(dir);
}

// recommend adds the reference to each verification round, so every verified point is judged
// against it: the round's eval holds it, and q8_0 itself is verified to pass.
TEST(AuditRelativeTest, RecommendVerifiesAgainstTheReference) {
  const fs::path dir = testing::MakeTempDir("recommend-relative");
  const auto r = testing::RunCli("recommend --model " + testing::BundledModelDir().string() + " --threads 2 --data " +
                                     (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                                     " --budget 1800 --ctx 256 --calib-windows 2 --windows 1 --stage proxy "
                                     "--verify-points 1 --lengths 128 --policy relative --out " +
                                     (dir / "rec").string(),
                                 300);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const json j = Results(dir / "rec");
  ASSERT_FALSE(j["verified"].empty()) << j.dump();
  int rounds = 0;
  for (const auto& entry : fs::directory_iterator(dir / "rec")) {
    if (entry.path().filename().string().rfind("verify-", 0) != 0) continue;
    ++rounds;
    const json eval = Results(entry.path() / "eval");
    bool has_reference = false;
    for (const json& c : eval["configs"])
      has_reference = has_reference || c["spec"] == "k=q8_0,v=q8_0,engine=llama.cpp";
    EXPECT_TRUE(has_reference) << entry.path();
  }
  EXPECT_GT(rounds, 0);
  EXPECT_NE(r.out.find("cheapest that passes: k=q8_0,v=q8_0,engine=llama.cpp"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
