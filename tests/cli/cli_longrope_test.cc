// LongRoPE through the CLI (docs/models-phi3.md): the factor set follows --ctx, and every command
// that measures says which set it ran — info in text and JSON, eval in its results' notes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/phi3_longrope.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliLongRope, InfoSaysWhichFactorsTheContextSelects) {
  const fs::path dir = testing::MakeTempDir("cli-longrope-info");
  const std::string model = testing::WritePhi3LongRopeGguf(dir).string();
  const auto at_original = testing::RunCli("info --model " + model + " --ctx 256");
  ASSERT_EQ(at_original.exit_code, 0) << at_original.err;
  EXPECT_NE(at_original.out.find("rope: longrope theta 10000"), std::string::npos) << at_original.out;
  EXPECT_NE(at_original.out.find("LongRoPE: the short factors at a context of 256 (at most the original 256), for "
                                 "every position, as llama.cpp with -c 256 and vLLM with --max-model-len 256 run "
                                 "them; cos/sin scaled by 1.22474"),
            std::string::npos)
      << at_original.out;

  const auto above = testing::RunCli("info --model " + model + " --ctx 512 --json");
  ASSERT_EQ(above.exit_code, 0) << above.err;
  const json j = json::parse(above.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << above.out;
  EXPECT_EQ(j["model"]["rope"]["type"], "longrope");
  EXPECT_EQ(j["model"]["rope"]["factors_at_ctx"], "long");
  EXPECT_EQ(j["model"]["rope"]["original_context"], testing::kPhi3LongRopeOriginal);
  EXPECT_FLOAT_EQ(j["model"]["rope"]["attn_factor"].get<float>(), testing::Phi3LongRopeAttnFactor());
  EXPECT_EQ(j["model"]["rope"]["dims"], 16);

  // Partial rotary (Phi-4-mini's shape): said in text and JSON.
  const std::string rot8 = testing::WritePhi3LongRopeGguf(dir, 8).string();
  const auto partial = testing::RunCli("info --model " + rot8);
  ASSERT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_NE(partial.out.find("rotary: the first 8 of 16 dims of each head (the rest pass through)"), std::string::npos)
      << partial.out;
  const auto partial_json = testing::RunCli("info --model " + rot8 + " --json");
  ASSERT_EQ(partial_json.exit_code, 0) << partial_json.err;
  EXPECT_EQ(json::parse(partial_json.out)["model"]["rope"]["dims"], 8);
  fs::remove_all(dir);
}

TEST(CliLongRope, EvalNotesTheFactorsItRan) {
  const fs::path dir = testing::MakeTempDir("cli-longrope-eval");
  const std::string model = testing::WritePhi3LongRopeGguf(dir).string();
  const auto r = testing::RunCli("eval --model " + model + " --threads 2 --data " +
                                 (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                                 " --ctx 512 --windows 1 --kv k=fp8_e4m3,v=fp8_e4m3 --out " + (dir / "eval").string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = json::parse(testing::ReadFile((dir / "eval" / "results.json").string()), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  bool noted = false;
  for (const json& n : j["notes"])
    noted = noted || n.get<std::string>().rfind("LongRoPE: the long factors at a context of 512", 0) == 0;
  EXPECT_TRUE(noted) << j["notes"].dump();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
