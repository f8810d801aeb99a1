// info and deploy on a model with sliding-window layers: the tiny gpt-oss golden GGUF (3 layers,
// layers 0 and 2 sliding with window 8, 2 KV heads x head_dim 16, so one cell of one layer is 128 B
// in f16). Both print the per-layer-type breakdown and llama.cpp's --swa-full variant.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

using testing::CliResult;
using testing::RunCli;

std::string GptOss() { return "--model " + testing::Fixture("golden/llamacpp/gpt-oss/model.gguf").string() + " "; }

TEST(CliKvMemorySlidingTest, DeploySplitsGlobalAndSlidingLayersAndShowsSwaFull) {
  const CliResult r = RunCli("deploy " + GptOss() + "--kv k=f16,v=f16 --ctx 4096");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // llama.cpp: the global layer 4096 cells, the sliding ones min(4096, 8 + 512) -> 768 cells.
  for (const char* needle :
       {"3 layers (2 sliding, window 8)", "1 global layer x 4096 cells + 2 sliding layers x 768 cells",
        "with --swa-full:", "2 sliding layers x 4096 cells", "-np 1", "counted as full"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << "lacks '" << needle << "':\n" << r.out;
  }
}

TEST(CliKvMemorySlidingTest, DeployJsonHasTheBreakdownAndTheVariant) {
  const CliResult r = RunCli("deploy " + GptOss() + "--kv k=f16,v=f16 --ctx 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["sliding_layers"], 2);
  const nlohmann::json& l = j["engines"][0];
  ASSERT_EQ(l["engine"], "llama.cpp");
  // 1 x 4096 x 128 = 524288; 2 x 768 x 128 = 196608; --swa-full 3 x 4096 x 128 = 1572864.
  EXPECT_EQ(l["global_bytes"], 524288);
  EXPECT_EQ(l["sliding_bytes"], 196608);
  EXPECT_EQ(l["kv_bytes_at_target"], 720896);
  EXPECT_EQ(l["kv_bytes_per_token"], 176);  // 720896 / 4096
  ASSERT_EQ(l["memory_variants"].size(), 1u);
  EXPECT_EQ(l["memory_variants"][0]["flag"], "--swa-full");
  EXPECT_EQ(l["memory_variants"][0]["kv_bytes_at_target"], 1572864);
  EXPECT_TRUE(j["engines"][3]["memory_variants"].empty()) << j["engines"][3]["engine"];
}

TEST(CliKvMemorySlidingTest, InfoCountsTheWindowAndPrintsLlamaCppsFigures) {
  const CliResult r = RunCli("info " + GptOss() + "--ctx 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sliding_layers"], 2);
  // f32, 256 B per position and layer: (256 x 4096 + 2 x 256 x 8) / 4096 = 257.
  EXPECT_EQ(j["kv"][0]["bytes_per_token"], 257);
  ASSERT_EQ(j["llamacpp"].size(), 1u);
  EXPECT_EQ(j["llamacpp"][0]["kv_bytes_at_target"], 720896);
  EXPECT_EQ(j["llamacpp"][0]["memory_variants"][0]["kv_bytes_at_target"], 1572864);
  const CliResult text = RunCli("info " + GptOss() + "--ctx 4096");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* needle :
       {"kv layers: 1 global + 2 sliding (window 8)", "llama.cpp k=f16,v=f16 at 4096 tokens", "  with --swa-full: "}) {
    EXPECT_NE(text.out.find(needle), std::string::npos) << "lacks '" << needle << "':\n" << text.out;
  }
}

}  // namespace
}  // namespace kvaudit
