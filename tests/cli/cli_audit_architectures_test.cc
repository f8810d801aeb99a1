// `kvaudit audit` end to end on a tiny model of each architecture beyond Llama/Mistral/Qwen
// (llama.cpp's goldens, ../shared/golden/llamacpp: random weights, head_dim 16, so the candidates
// are the element-wise fp8 formats): eval with the attention diagnosis, the probes, the sensitivity
// run and the recommendation under a budget, the gate's verdicts, the report. Random weights fail
// every probe with the full-precision cache too, which the audit must say ("no signal") rather than
// pass or fail them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class AuditArchitectureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AuditArchitectureTest, RunsEndToEnd) {
  const fs::path model = testing::Fixture("golden/llamacpp/" + GetParam() + "/model.gguf");
  const fs::path dir = testing::MakeTempDir("audit-" + GetParam());
  const auto r = testing::RunCli("audit --model " + model.string() + " --threads 2 --data " +
                                     (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                                     " --ctx 512 --windows 2 --lengths 512 --attn-samples 4 --kv k=fp8_e4m3,v=fp8_e4m3"
                                     " --formats fp8_e4m3,fp8_e5m2 --budget 0.6xf16 --out " +
                                     dir.string(),
                                 600);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err << r.out;  // a verdict, not an error
  EXPECT_NE(r.out.find("no signal: needle: the baseline passes 0 of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recommendation under --budget 0.6xf16"), std::string::npos) << r.out;
  // The probes reach the target context (--lengths 512 at --ctx 512): no line says they stop short.
  EXPECT_EQ(r.out.find("probes ran up to"), std::string::npos) << r.out;

  const json j = json::parse(testing::ReadFile((dir / "results.json").string()), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["configs"].size(), 1u) << j.dump();
  const std::string verdict = j["configs"][0]["verdict"];
  EXPECT_TRUE(verdict == "PASS" || verdict == "FAIL" || verdict == "INCONCLUSIVE") << verdict;
  // Each stage left its results: eval (with its per-layer attention diagnosis), probes, the
  // recommendation's sensitivity and verification, the report.
  const json eval = json::parse(testing::ReadFile((dir / "eval" / "results.json").string()), nullptr, false);
  ASSERT_FALSE(eval.is_discarded());
  EXPECT_FALSE(eval["configs"][0]["attention"].empty()) << eval["configs"][0].dump().substr(0, 400);
  EXPECT_TRUE(fs::exists(dir / "probe" / "results.json"));
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  // Sliding and global layers are measured as what they are: the sensitivity parts carry their
  // layer's window, and the search has a global/sliding front on the models with both kinds.
  const bool both_kinds = GetParam() == "gemma2" || GetParam() == "gemma3" || GetParam() == "gpt-oss";
  const json rec = json::parse(testing::ReadFile((dir / "recommend" / "results.json").string()), nullptr, false);
  const json sens =
      json::parse(testing::ReadFile((dir / "recommend" / "sensitivity" / "results.json").string()), nullptr, false);
  ASSERT_FALSE(rec.is_discarded() || sens.is_discarded());
  bool kind_front = false;
  for (const json& f : rec["fronts"])
    kind_front = kind_front || (f["shape"] == "global/sliding" && !f["points"].empty());
  EXPECT_EQ(kind_front, both_kinds) << rec["fronts"].dump().substr(0, 600);
  int sliding_parts = 0;
  for (const json& p : sens["formats"][0]["parts"]) sliding_parts += p["window"].get<int>() > 0;
  EXPECT_EQ(sliding_parts > 0, both_kinds);
  EXPECT_EQ(sens["formats"][0].contains("by_layer_kind"), both_kinds);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Architectures, AuditArchitectureTest,
                         ::testing::Values("gemma2", "gemma3", "gpt-oss", "qwen3moe", "mixtral", "phi3"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace kvaudit
