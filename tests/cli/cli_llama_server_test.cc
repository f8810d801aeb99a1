// Eval through a real llama-server (llama.cpp's own, built by scripts/build_llamacpp.sh): the
// bundled model's f16 GGUF served with an f16 cache and with a q4_0 cache (-fa on, one slot, one
// thread: deterministic), teacher-forced one position per request (endpoint/remote_prefix_scoring.cc),
// against the in-process emulation of llama.cpp (engine=llama.cpp: its weight products, attention
// and cache) on the same GGUF and windows, scored one token per forward pass (--ubatch 1) as the
// server computes them. Top-1 and the PPL ratio are then the server's up to the precision of the
// log-probabilities it returns; the KLD through the server is a lower bound from its top 100
// (docs/endpoints.md "Eval through llama-server": the measured values).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/child_process.h"
#include "support/fixtures.h"
#include "support/llama_server.h"
#include "support/run_cli.h"
#include "support/served_pids.h"

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

// `kvaudit SUBCOMMAND` on the f16 GGUF with `flags`, its servers started from a llama-server
// template ending in `cache_flags` (-ctk/-ctv with placeholders), every server's pid recorded in
// `pids` (support/served_pids.h), run to its end: what it printed and its exit status.
struct ServedRun {
  std::string said, err;
  std::optional<int> exit;
};
ServedRun RunWithLlamaServers(const std::string& subcommand, const std::string& flags, const fs::path& pids,
                              const std::string& cache_flags) {
  const std::string server = testing::LlamaCppTool("llama-server").string();
  const std::string cmd = testing::PidRecordingTemplate(
      pids, server + " -m " + Gguf() + " -c 512 -np 1 -t 1 -fa on --host 127.0.0.1 --port {port} " + cache_flags);
  std::vector<std::string> argv = {testing::KvauditBinary().string(), subcommand, "--model", Gguf()};
  std::istringstream words("--data " + (testing::RepoDir() / "data/eval-docs.jsonl").string() +
                           " --threads 2 --ctx 256 --windows 2 --lengths 256 --policy balanced " + flags);
  for (std::string w; words >> w;) argv.push_back(w);
  argv.push_back("--serve-cmd"), argv.push_back(cmd);
  ServedRun run;
  auto child = testing::ChildProcess::Start(argv);
  if (!child) return ADD_FAILURE() << "cannot start " << argv[0], run;
  for (std::optional<std::string> line; (line = child->ReadLine(300000));) run.said += *line + "\n";
  run.exit = child->WaitExit(30000);
  run.err = child->Stderr();
  return run;
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
  // In process, llama.cpp emulated one token per pass, with the f16 server beside it as one more
  // configuration.
  const auto local = RunCli(eval + "--baseline k=f16,v=f16,engine=llama.cpp --kv k=q4_0,v=q4_0,engine=llama.cpp " +
                                "--ubatch 1 --endpoint f16srv=" + f16->url() + " --out " + (dir / "local").string(),
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
  // The f16 server is the emulated f16 baseline (measured: KLD 3.6e-7, PPL ratio 1 - 2.5e-5, from
  // the precision of the log-probabilities it returns).
  const json served_f16 = Overall(dir / "local", "f16srv");
  EXPECT_EQ(served_f16["tokens"], 510);
  EXPECT_EQ(served_f16["top1_agree"], 1.0);
  EXPECT_LT(served_f16["kld_mean"].get<double>(), 1e-5);
  EXPECT_NEAR(served_f16["ppl_ratio"].get<double>(), 1.0, 1e-4);
  // q4_0 through the servers against in process: the same top-1 agreement (a count of tokens) and
  // PPL ratio (measured 0.835294 both; 1.0115622 vs 1.0115621); the KLD through the servers is a
  // lower bound from the top 100 within 15% of the exact one (measured 0.0829 vs 0.0902: 92%).
  const json served_q4 = Overall(dir / "remote", "q4");
  const json emulated_q4 = Overall(dir / "local", "k=q4_0,v=q4_0,engine=llama.cpp");
  EXPECT_EQ(served_q4["top1_agree"], emulated_q4["top1_agree"]);
  EXPECT_NEAR(served_q4["ppl_ratio"].get<double>(), emulated_q4["ppl_ratio"].get<double>(), 1e-5);
  const double bound = served_q4["kld_mean"], exact = emulated_q4["kld_mean"];
  EXPECT_GT(bound, 0.85 * exact) << bound << " vs " << exact;
  EXPECT_LE(bound, exact * (1 + 1e-6)) << bound << " vs " << exact;
  fs::remove_all(dir);
}

// recommend against llama-server itself: the template sets one type for K and V (-ctk {k} -ctv
// {k}), so the search is q4_0 then q8_0, cheapest first, each through its own server beside the
// f32 baseline's; q4_0 fails the policy, q8_0 passes and is recommended with the command that
// deploys it. No server is left (each pid recorded by an sh wrapper).
TEST(LlamaServerCliTest, RecommendWithServeCmdSearchesLlamaServersCheapestFirst) {
  const fs::path dir = testing::MakeTempDir("llama-server-recommend"), pids = dir / "pids", out = dir / "out";
  const ServedRun run =
      RunWithLlamaServers("recommend", "--budget 0.6xf16 --out " + out.string(), pids, "-ctk {k} -ctv {k}");
  ASSERT_EQ(run.exit, std::optional<int>(0)) << run.err << run.said;
  const std::string& said = run.said;
  testing::ExpectAllServersGone(pids, 3);  // f32 (the baseline), q4_0, q8_0
  std::ifstream results(out / "results.json");
  const json j = json::parse(results, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["candidates"].size(), 2u);
  const std::string q8 = "k=q8_0,v=q8_0,engine=llama.cpp", q4 = "k=q4_0,v=q4_0,engine=llama.cpp";
  EXPECT_EQ(j["candidates"][0]["spec"], q4);
  EXPECT_EQ(j["candidates"][0]["verdict"], "FAIL");
  EXPECT_EQ(j["candidates"][0]["endpoint"]["dialect"], "llama-server");
  EXPECT_EQ(j["candidates"][1]["spec"], q8);
  EXPECT_EQ(j["candidates"][1]["pass"], true);
  EXPECT_EQ(j["recommended"], q8);
  EXPECT_NE(said.find("; exec " + testing::LlamaCppTool("llama-server").string() + " -m " + Gguf() +
                      " -c 512 -np 1 -t 1 -fa on --host 127.0.0.1 --port {port} -ctk q8_0 -ctv q8_0'\n"),
            std::string::npos)
      << said;
  fs::remove_all(dir);
}

// The main job against llama-server itself: kvaudit starts one server per cache type from the
// template (-ctk/-ctv {k}/{v}), audits them through the API, stops them, and prints the verdict
// block and writes the report; no server is left (each pid recorded by an sh wrapper). Then
// `gate --endpoint` on servers started later: one with the cache type the audit says to deploy
// passes, one with another fails naming both.
TEST(LlamaServerCliTest, AuditWithServeCmdStartsAuditsAndStopsLlamaServersAndGateChecksTheDeployment) {
  const fs::path dir = testing::MakeTempDir("llama-server-audit"), pids = dir / "pids", out = dir / "out";
  const ServedRun run = RunWithLlamaServers("audit", "--kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --out " + out.string(),
                                            pids, "-ctk {k} -ctv {v}");
  ASSERT_EQ(run.exit, std::optional<int>(1)) << run.err;  // q4_0 fails policy balanced
  const std::string& said = run.said;
  testing::ExpectAllServersGone(pids, 3);  // f32 (the baseline), q8_0, q4_0
  EXPECT_NE(said.find("=== kvaudit audit: " + Gguf()), std::string::npos) << said;
  EXPECT_NE(said.find("measured on servers kvaudit started (--serve-cmd"), std::string::npos) << said;
  EXPECT_TRUE(fs::exists(out / "report.html"));
  std::ifstream results(out / "results.json");
  const json j = json::parse(results, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["configs"].size(), 2u);
  EXPECT_EQ(j["configs"][0]["endpoint"]["dialect"], "llama-server");
  const std::string q8 = "k=q8_0,v=q8_0,engine=llama.cpp", q4 = "k=q4_0,v=q4_0,engine=llama.cpp";
  EXPECT_EQ(j["configs"][1]["spec"], q4);  // as llama-server runs it by default (rotation on)
  EXPECT_EQ(j["configs"][1]["verdict"], "FAIL");
  EXPECT_EQ(j["deploy"], q8);
  EXPECT_EQ(Overall(out / "eval", q4)["tokens"], 510);

  const std::vector<std::string> common = {"-m", Gguf(), "-c", "512", "-np", "1", "-t", "1", "-fa", "on"};
  for (const char* type : {"q4_0", "q8_0"}) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"-ctk", type, "-ctv", type});
    auto server = testing::LlamaServer::Start(args);
    ASSERT_TRUE(server);
    const auto gate = RunCli("gate --results " + out.string() + " --endpoint " + server->url(), 120);
    if (std::string(type) == "q4_0") {
      EXPECT_EQ(gate.exit_code, 1) << gate.err;
      EXPECT_EQ(gate.out.find("deployment " + server->url() + ": FAIL: its log-probabilities match " + q4 +
                              " (mean |d logprob| 0 over 32 positions), not the audited " + q8 + " ("),
                0u)
          << gate.out;
    } else {
      EXPECT_EQ(gate.exit_code, 0) << gate.err;
      EXPECT_EQ(
          gate.out.find(
              "deployment " + server->url() + ": runs " + q8 +
              " as audited: its log-probabilities match it (mean |d logprob| 0 over 32 positions; the nearest other, "),
          0u)
          << gate.out;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
