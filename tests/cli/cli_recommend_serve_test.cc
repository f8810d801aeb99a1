// `recommend --serve-cmd` (decide/audit/served_search.h): the engine's own settings searched
// through servers kvaudit starts, cheapest first, one candidate's server at a time beside one
// baseline server; the first that passes is the recommendation, every server is stopped (after
// success, the bounds, and Ctrl-C), and what was measured through a server is what the same
// configuration measures in process. The servers here are `kvaudit serve` (seconds to start); the
// same search against llama.cpp's llama-server is in cli_llama_server_test.cc. Each template is
// wrapped in `sh -c 'echo $$ >> PIDS; exec SERVER ...'`, so PIDS lists every server's pid.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/child_process.h"
#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/served_pids.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ExpectAllServersGone;
using testing::ReadFile;
using testing::RecordedPids;
using testing::RunCli;
using testing::ShellQuoted;

// A kvaudit serve per configuration with --kv `kv`, its pid recorded; `before` runs in the wrapper
// ahead of the server (a failure to plant).
std::string ServeCmd(const fs::path& pids, const std::string& kv = "k={k},v={v}", const std::string& before = "") {
  return testing::KvauditServeTemplate(pids, kv, before);
}

// kvaudit serve computes natively: --target native names the candidates as it runs them.
const std::string kSmall = "--ctx 256 --windows 2 --lengths 256 --policy balanced --target native ";
// The bounds' tests measure one candidate, which fails on any window: the smallest run.
const std::string kSmallest = "--ctx 128 --windows 1 --lengths 128 --policy balanced --target native ";

std::string Recommend(const std::string& flags, const fs::path& out, const std::string& size = kSmall) {
  return "recommend " + testing::BundledJobFlags() + size + flags + " --out " + out.string();
}

TEST(RecommendServeCmdTest, SearchesCheapestFirstStopsAtTheFirstPassAndLeavesNoServerBehind) {
  const fs::path dir = testing::MakeTempDir("recommend-serve"), pids = dir / "pids", out = dir / "out";
  const auto r = RunCli(Recommend("--budget 0.6xf16 --serve-cmd " + ShellQuoted(ServeCmd(pids)), out));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ExpectAllServersGone(pids, 3);  // the baseline's, q4_0's (fails) and q8_0/q4_0's (passes): no more
  const json j = json::parse(ReadFile((out / "results.json").string()));
  EXPECT_EQ(j["search"], "servers");
  EXPECT_EQ(j["baseline"]["spec"], "k=f32,v=f32");
  EXPECT_EQ(j["budget"]["bytes_per_token"], 2457);  // 0.6 of f16's 4096, rounded down
  // The -ctk/-ctv grid of q8_0 and q4_0 in ascending bytes; at equal bytes the q8_0 K first.
  const std::vector<std::string> order = {"k=q4_0,v=q4_0", "k=q8_0,v=q4_0", "k=q4_0,v=q8_0", "k=q8_0,v=q8_0"};
  const std::vector<int> bytes = {1152, 1664, 1664, 2176};
  ASSERT_EQ(j["candidates"].size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(j["candidates"][i]["spec"], order[i]);
    EXPECT_EQ(j["candidates"][i]["bytes_per_token"], bytes[i]);
  }
  const json& q4 = j["candidates"][0];
  EXPECT_EQ(q4["state"], "measured");
  EXPECT_EQ(q4["verdict"], "FAIL");                           // KLD 0.079 against balanced's 0.03
  EXPECT_EQ(q4["reported_cache"]["cache"], "k=q4_0,v=q4_0");  // the server's own /metrics
  EXPECT_EQ(j["candidates"][1]["state"], "measured");
  EXPECT_EQ(j["candidates"][1]["pass"], true);  // INCONCLUSIVE on 2 windows: a pass under balanced
  EXPECT_EQ(j["candidates"][2]["state"], "not needed: k=q8_0,v=q4_0 passed with as many bytes");
  EXPECT_EQ(j["candidates"][3]["state"], "not needed: k=q8_0,v=q4_0 passed with fewer bytes");
  EXPECT_TRUE(j["candidates"][3]["verdict"].is_null());
  EXPECT_EQ(j["recommended"], "k=q8_0,v=q4_0");
  const std::string deploy = j["deploy_command"];
  EXPECT_NE(deploy.find(" --port {port} --kv k=q8_0,v=q4_0'"), std::string::npos) << deploy;
  EXPECT_NE(r.out.find("recommended: k=q8_0,v=q4_0 (1664 bytes per token, 0.406 of f16): the cheapest that passes"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("deploy: sh -c "), std::string::npos) << r.out;
  for (const char* log : {"k_f32_v_f32.log", "k_q4_0_v_q4_0.log", "k_q8_0_v_q4_0.log"})
    EXPECT_TRUE(fs::exists(out / "servers" / log)) << log;
  EXPECT_FALSE(fs::exists(out / "servers" / "k_q8_0_v_q8_0.log"));

  // The report draws the candidates' own runs; the search's directory is its table, said in one line.
  const auto page = RunCli("report " + out.string());
  EXPECT_EQ(page.exit_code, 2);
  EXPECT_NE(page.err.find(" is a search through servers (recommend --serve-cmd)"), std::string::npos) << page.err;
  const fs::path q4_dir = out / "candidates" / "k_q4_0_v_q4_0";
  const auto runs = RunCli("report " + (q4_dir / "eval").string() + " " + (q4_dir / "probe").string() + " --out " +
                           (dir / "q4.html").string());
  EXPECT_EQ(runs.exit_code, 0) << runs.err;

  // What the servers measured is what the same configurations measure in process.
  const fs::path local = dir / "local";
  const auto l =
      RunCli("eval " + testing::BundledJobFlags() +
             "--ctx 256 --windows 2 --attn-samples 0 --kv k=q4_0,v=q4_0 --kv k=q8_0,v=q4_0 --out " + local.string());
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const json native = json::parse(ReadFile((local / "results.json").string()));
  for (size_t i = 0; i < 2; ++i) {
    const json served =
        json::parse(ReadFile((out / j["candidates"][i]["dir"].get<std::string>() / "eval" / "results.json").string()));
    EXPECT_EQ(served["configs"][0]["overall"]["top1_agree"], native["configs"][i]["overall"]["top1_agree"]) << i;
  }
  fs::remove_all(dir);
}

// A template without {v} sets one type for K and V: only the grid's diagonal. --search-time stops
// the search before the next server once spent (each candidate here takes seconds).
TEST(RecommendServeCmdTest, OneTypeTemplatesSearchTheDiagonalAndTheTimeBoundStopsTheSearch) {
  const fs::path dir = testing::MakeTempDir("recommend-serve-time"), pids = dir / "pids", out = dir / "out";
  const auto r = RunCli(Recommend(
      "--budget 0.6xf16 --search-time 1 --serve-cmd " + ShellQuoted(ServeCmd(pids, "k={k},v={k}")), out, kSmallest));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  ExpectAllServersGone(pids, 2);
  const json j = json::parse(ReadFile((out / "results.json").string()));
  EXPECT_EQ(j["one_type"], true);
  ASSERT_EQ(j["candidates"].size(), 2u);
  EXPECT_EQ(j["candidates"][0]["spec"], "k=q4_0,v=q4_0");
  EXPECT_EQ(j["candidates"][0]["verdict"], "FAIL");
  EXPECT_EQ(j["candidates"][1]["spec"], "k=q8_0,v=q8_0");
  EXPECT_EQ(j["candidates"][1]["state"], "--search-time reached");
  EXPECT_TRUE(j["recommended"].is_null());
  EXPECT_NE(r.out.find("recommended: none yet: every candidate measured failed, and --search-time reached"),
            std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

TEST(RecommendServeCmdTest, TheCountBoundAndTheBudgetLimitWhatIsStarted) {
  const fs::path dir = testing::MakeTempDir("recommend-serve-count"), pids = dir / "pids", out = dir / "out";
  const auto r =
      RunCli(Recommend("--budget 1700 --max-servers 1 --serve-cmd " + ShellQuoted(ServeCmd(pids)), out, kSmallest));
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  ExpectAllServersGone(pids, 2);
  const json j = json::parse(ReadFile((out / "results.json").string()));
  ASSERT_EQ(j["candidates"].size(), 4u);
  EXPECT_EQ(j["candidates"][0]["state"], "measured");
  EXPECT_EQ(j["candidates"][1]["state"], "--max-servers reached");
  EXPECT_EQ(j["candidates"][2]["state"], "--max-servers reached");
  EXPECT_EQ(j["candidates"][3]["state"], "over the budget");  // 2176 bytes > 1700
  EXPECT_NE(r.out.find("not measured (over the budget)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tokens in 1 window, "), std::string::npos) << r.out;  // one window: singular
  fs::remove_all(dir);
}

// A setting the engine refuses (its server exits before it is ready: llama.cpp refuses a quantized
// V cache without flash attention) is a candidate that cannot deploy as launched: recorded with the
// reason, and the search goes on to the next.
TEST(RecommendServeCmdTest, ACandidateWhoseServerDoesNotStartIsSkippedWithItsReason) {
  const fs::path dir = testing::MakeTempDir("recommend-serve-refused"), pids = dir / "pids", out = dir / "out";
  const std::string cmd = ServeCmd(pids, "k={k},v={v}", "test {k} = q4_0 && exit 3; ");
  const auto r = RunCli(Recommend("--budget 0.6xf16 --max-servers 2 --serve-cmd " + ShellQuoted(cmd), out, kSmallest));
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err << r.out;
  ExpectAllServersGone(pids, 3);  // the baseline's, q4_0's (exited) and q8_0/q4_0's
  const json j = json::parse(ReadFile((out / "results.json").string()));
  ASSERT_EQ(j["candidates"].size(), 4u);
  EXPECT_EQ(j["candidates"][0]["state"].get<std::string>().rfind(
                "its server did not start: the server for k=q4_0,v=q4_0 exited with status 3 before it was ready", 0),
            0u)
      << j["candidates"][0]["state"];
  EXPECT_TRUE(j["candidates"][0]["verdict"].is_null());
  EXPECT_EQ(j["candidates"][1]["spec"], "k=q8_0,v=q4_0");
  EXPECT_EQ(j["candidates"][1]["state"], "measured");
  fs::remove_all(dir);
}

// Mistakes found before any server starts: one line, exit 2, no server.
TEST(RecommendServeCmdTest, MistakesAreOneLineBeforeAnyServerStarts) {
  const fs::path dir = testing::MakeTempDir("recommend-serve-errors"), pids = dir / "pids";
  const std::string cmd = " --serve-cmd " + ShellQuoted(ServeCmd(pids));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--budget 0.6xf16 --max-servers 2", "--max-servers bounds the search through servers; hint: give --serve-cmd"},
      {"--budget 0.6xf16 --calib-windows 2" + cmd,
       "--calib-windows belongs to the per-layer search in process, not the search through servers"},
      {"--budget 1000" + cmd, "--budget 1000 allows 1000 bytes per token at 256 tokens, below the smallest candidate"},
      {"--budget 0.6xf16 --serve-cmd 'srv -ctk {k}'", "{port}"},
      {"--budget 0.6xf16 --formats q8_0,q4_0,recent=64" + cmd,
       ": --serve-cmd passes one K and one V format to the server ({k}, {v}), and this spec sets more"},
  };
  for (const auto& [flags, said] : cases) {
    const auto r = RunCli(Recommend(flags, dir / "out"));
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(said), std::string::npos) << flags << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto relative = RunCli("recommend " + testing::BundledJobFlags() + "--policy relative --budget 0.6xf16" + cmd);
  EXPECT_EQ(relative.exit_code, 2);
  EXPECT_NE(relative.err.find("which --serve-cmd would need a server of its own for"), std::string::npos)
      << relative.err;
  EXPECT_TRUE(RecordedPids(pids).empty());
  fs::remove_all(dir);
}

// Ctrl-C while a candidate is measured: the baseline's server and the candidate's are stopped.
TEST(RecommendServeCmdTest, CtrlCLeavesNoServerBehind) {
  const fs::path dir = testing::MakeTempDir("recommend-serve-signal"), pids = dir / "pids", out = dir / "out";
  std::vector<std::string> argv = {testing::KvauditBinary().string(), "recommend"};
  std::istringstream words(testing::BundledJobFlags() +
                           "--ctx 512 --windows 6 --lengths 512 --target native --budget 0.6xf16 --out " +
                           out.string());
  for (std::string w; words >> w;) argv.push_back(w);
  argv.push_back("--serve-cmd"), argv.push_back(ServeCmd(pids));
  auto child = testing::ChildProcess::Start(argv);
  ASSERT_NE(child, nullptr);
  const fs::path progress = out / "candidates" / "k_q4_0_v_q4_0" / "eval" / "progress.jsonl";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !fs::exists(progress))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(RecordedPids(pids).size(), 2u) << child->Stderr();
  child->Signal(SIGINT);
  ASSERT_EQ(child->WaitExit(30000), std::optional<int>(-1)) << "it finished before the signal, or ignored it";
  ExpectAllServersGone(pids, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
