// kvaudit deploy as a user runs it: the per-engine settings of a spec on the bundled model, its
// --json document, and bad input as one line with exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

using testing::CliResult;
using testing::RunCli;

const std::string kModel = "--model " + testing::BundledModelDir().string() + " ";

void ExpectOneLineError(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_EQ(r.err.rfind("kvaudit: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint:"), std::string::npos) << r.err;
}

TEST(CliDeployTest, TablePerEngineForTheBundledModel) {
  const CliResult r = RunCli("deploy " + kModel + "--kv k=q8_0,v=q4_0 --ctx 2048");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // llama.cpp runs it exactly; 8 layers x 2 KV heads x (68 B q8_0 K + 36 B q4_0 V) = 1664 B per token.
  for (const char* needle : {"k=q8_0,v=q4_0", "at 2048 tokens", "llama.cpp: exact", "-ctk q8_0  -ctv q4_0  -fa on",
                             "LLAMA_ATTN_ROT_DISABLE=1", "k=q8_0,v=q4_0,rot=0,engine=llama.cpp",
                             "ollama: not exact: ollama has one type for K and V", "OLLAMA_KV_CACHE_TYPE=q8_0",
                             "vLLM: not exact", "--kv-cache-dtype fp8_e4m3", "SGLang", "TensorRT-LLM", "transformers",
                             "ik_llama.cpp: exact", "1664 B per cell", "docs/deployment.md"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << "lacks '" << needle << "':\n" << r.out;
  }
}

TEST(CliDeployTest, JsonHasEveryEngineWithItsSettingsAndMemory) {
  const CliResult r = RunCli("deploy " + kModel + "--kv k=q8_0,v=q4_0 --ctx 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spec"], "k=q8_0,v=q4_0");
  EXPECT_EQ(j["ctx"], 4096);
  EXPECT_EQ(j["model"]["head_dim"], 64);
  ASSERT_EQ(j["engines"].size(), 7u);
  const nlohmann::json& l = j["engines"][0];
  EXPECT_EQ(l["engine"], "llama.cpp");
  EXPECT_TRUE(l["exact"].get<bool>());
  EXPECT_EQ(l["flags"], nlohmann::json({"-ctk q8_0", "-ctv q4_0", "-fa on", "LLAMA_ATTN_ROT_DISABLE=1"}));
  EXPECT_EQ(l["kv_bytes_per_token"], 1664);
  EXPECT_EQ(l["kv_bytes_at_target"], 1664 * 4096);
  const nlohmann::json& o = j["engines"][2];
  EXPECT_EQ(o["engine"], "ollama");
  EXPECT_FALSE(o["exact"].get<bool>());
  EXPECT_EQ(o["approximations"][0], "k=q8_0,v=q8_0");
  EXPECT_EQ(o["settings_for"], "k=q8_0,v=q8_0");
  for (const auto& e : j["engines"]) {
    for (const char* key :
         {"why_not", "command_example", "measure_spec", "notes", "applies_to", "kv_gib_at_target", "memory_layout"}) {
      EXPECT_TRUE(e.contains(key)) << e["engine"] << " lacks " << key;
    }
  }
}

TEST(CliDeployTest, BadInputIsOneLineAndExitTwo) {
  ExpectOneLineError(RunCli("deploy " + kModel + "--kv k=q9_0,v=q4_0"), "unknown format 'q9_0'");
  ExpectOneLineError(RunCli("deploy " + kModel), "deploy needs --kv");
  ExpectOneLineError(RunCli("deploy " + kModel + "--kv \"k=q8_0,v=q8_0;layers=9:k=f16\""),
                     "outside the model's 8 layers");
  ExpectOneLineError(RunCli("deploy " + kModel + "--kv k=q8_0,v=q8_0 --ctx 100000"), "exceeds the model's context");
  ExpectOneLineError(RunCli("deploy --model /nonexistent/model --kv k=q8_0,v=q8_0"), "/nonexistent/model");
}

}  // namespace
}  // namespace kvaudit
