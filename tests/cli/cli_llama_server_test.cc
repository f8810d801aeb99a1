// Eval through a real llama-server (llama.cpp's own, built by scripts/build_llamacpp.sh): the
// bundled model's f16 GGUF served with an f16 cache and with a q4_0 cache (-fa on, one slot, one
// thread: deterministic), teacher-forced one position per request (endpoint/remote_prefix_scoring.cc),
// against the in-process emulation of llama.cpp's cache (engine=llama.cpp) on the same GGUF and
// windows. The server computes its matmuls with f16 activations and one token per batch (decode),
// the emulation with exact f32 weights in prefill, so the two agree to f16 rounding on an f16
// cache and to the quantized cache's rounding-boundary noise on q4_0 (docs/endpoints.md
// "Eval through llama-server": the measured differences these bounds come from).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/llama_server.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunCli;

const std::string& Gguf() {
  static const std::string p = testing::Fixture("models/gguf/kvq-code-16m-f16.gguf").string();
  return p;
}

json Overall(const fs::path& run, const std::string& spec) {
  std::ifstream in(run / "results.json");
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return ADD_FAILURE() << "no results in " << run, json();
  for (const json& c : j["configs"]) {
    if (c["spec"] == spec) return c["overall"];
  }
  ADD_FAILURE() << spec << " not in " << run;
  return json();
}

TEST(LlamaServerCliTest, EvalThroughLlamaServerAgreesWithTheInProcessEmulation) {
  const std::vector<std::string> common = {"-m", Gguf(), "-c", "512", "-np", "1", "-t", "1", "-fa", "on"};
  auto f16 = testing::LlamaServer::Start(common);
  std::vector<std::string> q4_args = common;
  q4_args.insert(q4_args.end(), {"-ctk", "q4_0", "-ctv", "q4_0"});
  auto q4 = testing::LlamaServer::Start(q4_args);
  ASSERT_TRUE(f16 && q4);
  const fs::path dir = testing::MakeTempDir("llama-server-eval");
  const std::string eval = "eval --model " + Gguf() + " --data " +
                           (testing::RepoDir() / "data/eval-docs.jsonl").string() +
                           " --ctx 256 --windows 2 --threads 2 --attn-samples 0 ";
  // Both sides through the servers: KLD a lower bound from the top 100 (llama-server's default here).
  const auto remote = RunCli(eval + "--baseline-endpoint f16=" + f16->url() + " --endpoint q4=" + q4->url() +
                                 " --out " + (dir / "remote").string(),
                             300);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  // In process, llama.cpp's cache emulated, with the f16 server beside it as one more configuration.
  const auto local = RunCli(eval + "--baseline k=f16,v=f16,engine=llama.cpp --kv k=q4_0,v=q4_0,engine=llama.cpp " +
                                "--endpoint f16srv=" + f16->url() + " --out " + (dir / "local").string(),
                            300);
  ASSERT_EQ(local.exit_code, 0) << local.err;

  {
    std::ifstream in(dir / "remote" / "results.json");
    const json j = json::parse(in, nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["configs"][0]["kld_estimate"]["kind"], "lower_bound_from_top_k");
    EXPECT_EQ(j["configs"][0]["kld_estimate"]["top_logprobs"], 100);
    EXPECT_EQ(j["configs"][0]["endpoint"]["dialect"], "llama-server");
  }
  // The f16 server is the emulated f16 baseline up to its f16 activations.
  const json served_f16 = Overall(dir / "local", "f16srv");
  EXPECT_EQ(served_f16["tokens"], 510);
  EXPECT_EQ(served_f16["top1_agree"], 1.0);
  EXPECT_LT(served_f16["kld_mean"].get<double>(), 1e-4);
  EXPECT_NEAR(served_f16["ppl_ratio"].get<double>(), 1.0, 1e-3);
  // q4_0: the bound through the servers against the exact in-process KLD, top-1 and PPL ratio.
  const json served_q4 = Overall(dir / "remote", "q4");
  const json emulated_q4 = Overall(dir / "local", "k=q4_0,v=q4_0,engine=llama.cpp");
  const double bound = served_q4["kld_mean"], exact = emulated_q4["kld_mean"];
  EXPECT_GT(bound, 0.8 * exact) << bound << " vs " << exact;
  EXPECT_LT(bound, 1.1 * exact) << bound << " vs " << exact;
  EXPECT_NEAR(served_q4["top1_agree"].get<double>(), emulated_q4["top1_agree"].get<double>(), 0.02);
  EXPECT_NEAR(served_q4["ppl_ratio"].get<double>(), emulated_q4["ppl_ratio"].get<double>(), 0.015);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
