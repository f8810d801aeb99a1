// `audit --serve-cmd` (decide/audit/served_configs.h, endpoint/server_launch.h): kvaudit starts
// one server per configuration from the template, audits them through their API, and leaves no
// server behind — after success, after a server that fails to start, after Ctrl-C and after
// SIGKILL of kvaudit. The servers here are `kvaudit serve` (seconds to start); the same with
// llama.cpp's own llama-server is in cli_llama_server_test.cc. Each template is wrapped in
// `sh -c 'echo $$ >> PIDS; exec SERVER ...'`, so PIDS lists every server's pid (exec keeps it).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/child_process.h"
#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/serve_process.h"
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

// The template: a kvaudit serve per configuration, its pid recorded; `before` runs in the wrapper
// ahead of the server (a failure to plant).
std::string ServeCmd(const fs::path& pids, const std::string& before = "") {
  return testing::KvauditServeTemplate(pids, "k={k},v={v}", before);
}

// kvaudit serve computes natively: --target native names the servers' configurations as it runs them.
const std::string kSmall =
    "--ctx 256 --windows 2 --lengths 256 --policy balanced --target native --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 ";

TEST(AuditServeCmdTest, AuditsThroughTheServersItStartsAndLeavesNoneBehind) {
  const fs::path dir = testing::MakeTempDir("audit-serve"), pids = dir / "pids", out = dir / "out";
  const auto r = RunCli("audit " + testing::BundledJobFlags() + kSmall + "--serve-cmd " + ShellQuoted(ServeCmd(pids)) +
                        " --out " + out.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  ExpectAllServersGone(pids, 3);  // the baseline's and the two configurations'
  EXPECT_NE(r.out.find("measured on servers kvaudit started (--serve-cmd; logs in " + (out / "servers").string() +
                       "): k=q8_0,v=q8_0 at http://127.0.0.1:"),
            std::string::npos)
      << r.out;
  const json audit = json::parse(ReadFile((out / "results.json").string()));
  ASSERT_EQ(audit["configs"].size(), 2u);
  EXPECT_EQ(audit["baseline"], "k=f32,v=f32");
  EXPECT_EQ(audit["configs"][0]["spec"], "k=q8_0,v=q8_0");
  EXPECT_EQ(audit["configs"][0]["endpoint"]["dialect"], "kvaudit");
  EXPECT_EQ(audit["configs"][1]["spec"], "k=q4_0,v=q4_0");
  EXPECT_EQ(audit["configs"][0]["reported_cache"]["cache"], "k=q8_0,v=q8_0");  // the server's own /metrics
  EXPECT_TRUE(audit["configs"][0]["reported_differs"].is_null());
  EXPECT_TRUE(fs::exists(out / "report.html"));
  for (const char* log : {"k_f32_v_f32.log", "k_q8_0_v_q8_0.log", "k_q4_0_v_q4_0.log"})
    EXPECT_TRUE(fs::exists(out / "servers" / log)) << log;

  // The in-process audit of the same configurations measures the same caches: its bytes, top-1
  // agreement and probe verdicts are the servers'.
  const fs::path local = dir / "local";
  const auto l = RunCli("audit " + testing::BundledJobFlags() + kSmall + "--out " + local.string());
  ASSERT_TRUE(l.exit_code == 0 || l.exit_code == 1) << l.err;
  const json native = json::parse(ReadFile((local / "results.json").string()));
  const json served_eval = json::parse(ReadFile((out / "eval" / "results.json").string()));
  const json native_eval = json::parse(ReadFile((local / "eval" / "results.json").string()));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(audit["configs"][i]["bytes_per_token"], native["configs"][i]["bytes_per_token"]);
    EXPECT_EQ(served_eval["configs"][i]["overall"]["top1_agree"], native_eval["configs"][i]["overall"]["top1_agree"]);
  }
  const json served_probe = json::parse(ReadFile((out / "probe" / "results.json").string()));
  const json native_probe = json::parse(ReadFile((local / "probe" / "results.json").string()));
  EXPECT_EQ(served_probe["probes"].size(), native_probe["probes"].size());
  for (size_t i = 0; i < served_probe["probes"].size() && i < native_probe["probes"].size(); ++i) {
    for (const char* key : {"config", "family", "variant", "length", "depth", "baseline_pass", "config_pass"})
      EXPECT_EQ(served_probe["probes"][i][key], native_probe["probes"][i][key]) << i << " " << key;
  }

  // gate --endpoint on servers started afterwards: the signature the audit took through its q8_0
  // server is reproduced exactly by another q8_0 server, and a q4_0 server is told apart.
  ASSERT_EQ(audit["deploy"], "k=q8_0,v=q8_0");
  auto q8 = testing::ServeProcess::Start({"--kv", "k=q8_0,v=q8_0", "--threads", "1"});
  auto q4 = testing::ServeProcess::Start({"--kv", "k=q4_0,v=q4_0", "--threads", "1"});
  ASSERT_TRUE(q8 && q4);
  const std::string url = "http://127.0.0.1:";
  const auto ok = RunCli("gate --results " + out.string() + " --endpoint " + url + std::to_string(q8->port()));
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ(ok.out.rfind("deployment " + url + std::to_string(q8->port()) +
                             ": runs k=q8_0,v=q8_0 as audited: its log-probabilities match it (mean |d logprob| 0 "
                             "over 32 positions; the nearest other, ",
                         0),
            0u)
      << ok.out;
  const auto wrong =
      RunCli("gate --results " + out.string() + " --json --endpoint q4=" + url + std::to_string(q4->port()));
  EXPECT_EQ(wrong.exit_code, 1) << wrong.err;
  const json checks = json::parse(wrong.out, nullptr, false);
  ASSERT_FALSE(checks.is_discarded()) << wrong.out;
  EXPECT_EQ(checks["deployments"][0]["nearest"], "k=q4_0,v=q4_0");
  EXPECT_EQ(checks["deployments"][0]["nearest_distance"], 0.0);
  EXPECT_EQ(checks["deployments"][0]["expected"], "k=q8_0,v=q8_0");
  EXPECT_EQ(checks["deployments"][0]["pass"], false);
  EXPECT_EQ(checks["deployments"][0]["reported_cache"]["cache"], "k=q4_0,v=q4_0");
  const auto unknown = RunCli("gate --results " + out.string() + " --config k=q5_0,v=q5_0 --endpoint " + url +
                              std::to_string(q4->port()));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--config k=q5_0,v=q5_0 is not a configuration of the audit in " + out.string() +
                             "; hint: one of k=f32,v=f32, k=q4_0,v=q4_0, k=q8_0,v=q8_0"),
            std::string::npos)
      << unknown.err;
  fs::remove_all(dir);
}

TEST(AuditServeCmdTest, AServerThatFailsToStartStopsTheOthersInOneLine) {
  const fs::path dir = testing::MakeTempDir("audit-serve-fail"), pids = dir / "pids", out = dir / "out";
  const std::string cmd = ServeCmd(pids, "test {k} = q4_0 && exit 3; ");
  const auto r = RunCli("audit " + testing::BundledJobFlags() + kSmall + "--serve-cmd " + ShellQuoted(cmd) + " --out " +
                        out.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the server for k=q4_0,v=q4_0 exited with status 3 before it was ready; hint: read " +
                       (out / "servers" / "k_q4_0_v_q4_0.log").string()),
            std::string::npos)
      << r.err;
  ExpectAllServersGone(pids, 3);
  fs::remove_all(dir);
}

// Servers the user started: --baseline-endpoint and --endpoint NAME=URL are judged like the rest,
// under the endpoint's name; their cache is the server's, so their bytes are unknown ("?" and
// null), and a passing one is named for deployment without settings.
TEST(AuditServeCmdTest, AuditsServersGivenAsEndpoints) {
  auto base = testing::ServeProcess::Start({"--kv", "k=f32,v=f32", "--threads", "1"});
  auto q8 = testing::ServeProcess::Start({"--kv", "k=q8_0,v=q8_0", "--threads", "1"});
  ASSERT_TRUE(base && q8);
  const fs::path dir = testing::MakeTempDir("audit-endpoints");
  const std::string url = "http://127.0.0.1:";
  const auto r = RunCli("audit " + testing::BundledJobFlags() +
                        "--ctx 256 --windows 2 --lengths 256 --policy balanced --baseline-endpoint base=" + url +
                        std::to_string(base->port()) + " --endpoint q8=" + url + std::to_string(q8->port()) +
                        " --out " + dir.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_NE(r.out.find("\nq8                                  ?           ?        ?           "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("measured through the servers given: q8 at " + url + std::to_string(q8->port())),
            std::string::npos)
      << r.out;
  const json audit = json::parse(ReadFile((dir / "results.json").string()));
  EXPECT_EQ(audit["baseline"], "base");
  EXPECT_TRUE(audit["configs"][0]["bytes_per_token"].is_null());
  EXPECT_EQ(audit["configs"][0]["endpoint"]["name"], "q8");
  EXPECT_EQ(audit["configs"][0]["pass"], true);  // INCONCLUSIVE on so few windows: a pass under balanced
  EXPECT_EQ(audit["deploy"], "q8");
  EXPECT_NE(r.out.find("deploy q8 (it passes; its cache is the server's, unknown to kvaudit, so no settings)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  // Under strict, nothing passes: no --budget hint (the search needs an in-process baseline) and no
  // "test q8_0" (the endpoint's cache is unknown).
  const auto strict = RunCli("audit " + testing::BundledJobFlags() +
                             "--ctx 256 --windows 2 --lengths 256 --policy strict --baseline-endpoint base=" + url +
                             std::to_string(base->port()) + " --endpoint q8=" + url + std::to_string(q8->port()) +
                             " --out " + (dir / "strict").string());
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_NE(strict.out.find("none of the configurations tested is safe for this workload at 256 tokens\n"),
            std::string::npos)
      << strict.out;
  const auto bench = RunCli("audit " + testing::BundledJobFlags() + "--bench --endpoint q8=" + url +
                            std::to_string(q8->port()) + " --out " + (dir / "b").string());
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_NE(bench.err.find("--bench measures kvaudit's own engine, not a server"), std::string::npos) << bench.err;
  const auto budget = RunCli("audit " + testing::BundledJobFlags() + "--budget 0.5xf16 --baseline-endpoint " + url +
                             std::to_string(base->port()) + " --endpoint q8=" + url + std::to_string(q8->port()) +
                             " --out " + (dir / "c").string());
  EXPECT_EQ(budget.exit_code, 2);
  EXPECT_NE(budget.err.find("--budget searches per-layer mixes in process"), std::string::npos) << budget.err;
  fs::remove_all(dir);
}

// A template that does not pass {k}/{v} on: every server runs f32 whatever was named, and each
// server's own report says so; the verdict block warns, results.json records it.
TEST(AuditServeCmdTest, AServerReportingAnotherCacheIsFlagged) {
  const fs::path dir = testing::MakeTempDir("audit-serve-report"), pids = dir / "pids", out = dir / "out";
  std::string cmd = ServeCmd(pids);
  cmd.replace(cmd.find("--kv k={k},v={v}"), std::string("--kv k={k},v={v}").size(), "--kv k=f32,v=f32");
  const auto r = RunCli("audit " + testing::BundledJobFlags() + kSmall + "--serve-cmd " + ShellQuoted(cmd) + " --out " +
                        out.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_NE(r.out.find("WARNING: k=q4_0,v=q4_0: the server reports kv=k=f32,v=f32, not k=q4_0,v=q4_0\n"),
            std::string::npos)
      << r.out;
  const json audit = json::parse(ReadFile((out / "results.json").string()));
  EXPECT_EQ(audit["configs"][0]["reported_differs"], "the server reports kv=k=f32,v=f32, not k=q8_0,v=q8_0");
  ExpectAllServersGone(pids, 3);
  fs::remove_all(dir);
}

// Ctrl-C and SIGKILL once eval is under way through all three servers.
void SignalMidAudit(int sig) {
  const fs::path dir = testing::MakeTempDir("audit-serve-signal"), pids = dir / "pids", out = dir / "out";
  std::vector<std::string> argv = {testing::KvauditBinary().string(), "audit"};
  std::istringstream words(
      testing::BundledJobFlags() +
      "--ctx 512 --windows 6 --lengths 512 --target native --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --out " +
      out.string());
  for (std::string w; words >> w;) argv.push_back(w);
  argv.push_back("--serve-cmd"), argv.push_back(ServeCmd(pids));
  auto child = testing::ChildProcess::Start(argv);
  ASSERT_NE(child, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !fs::exists(out / "eval" / "progress.jsonl"))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(RecordedPids(pids).size(), 3u) << child->Stderr();
  child->Signal(sig);
  ASSERT_EQ(child->WaitExit(30000), std::optional<int>(-1)) << "it finished before the signal, or ignored it";
  ExpectAllServersGone(pids, 3);
  fs::remove_all(dir);
}

TEST(AuditServeCmdTest, CtrlCLeavesNoServerBehind) { SignalMidAudit(SIGINT); }
TEST(AuditServeCmdTest, SigkillOfKvauditLeavesNoServerBehind) { SignalMidAudit(SIGKILL); }

}  // namespace
}  // namespace kvaudit
