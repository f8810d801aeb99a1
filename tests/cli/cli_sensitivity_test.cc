// `kvaudit sensitivity` end to end on the bundled model (short windows to stay fast): the keys of
// results.json, the ranked table, resume, refusal of a changed input, the same bytes for any
// --threads, and bad input (one line, exit 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

const std::string kArgs = "sensitivity --model " + testing::BundledModelDir().string() + " --data " +
                          (testing::RepoDir() / "data" / "eval-docs.jsonl").string() + " --formats q4_0 ";

nlohmann::json Results(const fs::path& dir) {
  return nlohmann::json::parse(ReadFile((dir / "results.json").string()), nullptr, false);
}

void ExpectEndToEnd(const nlohmann::json& e) {
  for (const char* key : {"spec", "kld_mean", "kld_p99", "top1_agree", "buckets"}) ASSERT_TRUE(e.contains(key)) << key;
  ASSERT_FALSE(e["buckets"].empty());
  for (const char* key : {"from", "to", "kld_mean"}) EXPECT_TRUE(e["buckets"][0].contains(key)) << key;
}

TEST(SensitivityCliTest, AutoStageKeysTableResumeAndRefusal) {
  const fs::path out = testing::MakeTempDir("sens-auto");
  const std::string cmd = kArgs + "--ctx 256 --windows 2 --threads 2 --out " + out.string();
  const auto r = RunCli(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = Results(out);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["kind"], "sensitivity");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["baseline"], "k=f32,v=f32,engine=llama.cpp");  // --target llama.cpp: q4_0 is its cache type
  EXPECT_EQ(j["target"], "llama.cpp");
  EXPECT_EQ(j["stage"], "auto");
  EXPECT_EQ(j["parts_measured_per_format"], 4);  // max(4, 16 / 4)
  EXPECT_EQ(j["data"]["windows"], 2);
  EXPECT_EQ(j["data"]["first_window"], 0);
  EXPECT_EQ(j["proxy"]["quantity"], "out_rel_err");
  // The model hash is the one the eval stages' fingerprints carry.
  std::ifstream journal(out / "proxy" / "progress.jsonl");
  std::string header;
  std::getline(journal, header);
  EXPECT_EQ(j["model_hash"], nlohmann::json::parse(header)["fingerprint"]["model"]);
  ASSERT_EQ(j["formats"].size(), 1u);
  const nlohmann::json& f = j["formats"][0];
  EXPECT_EQ(f["format"], "q4_0");
  EXPECT_EQ(f["all_quantized"]["spec"], "k=q4_0,v=q4_0,engine=llama.cpp");
  ExpectEndToEnd(f["all_quantized"]);
  ASSERT_EQ(f["parts"].size(), 16u);
  int measured = 0;
  for (const auto& p : f["parts"]) {
    for (const char* key :
         {"part", "layer", "tensor", "measured_end_to_end", "one_at_a_time", "leave_one_out", "proxy"}) {
      ASSERT_TRUE(p.contains(key)) << key;
    }
    EXPECT_EQ(p["proxy"]["quantity"], "out_rel_err");
    EXPECT_GT(p["proxy"]["score"].get<double>(), 0.0);
    if (!p["measured_end_to_end"].get<bool>()) {
      EXPECT_TRUE(p["one_at_a_time"].is_null());
      continue;
    }
    ++measured;
    ExpectEndToEnd(p["one_at_a_time"]);
    ExpectEndToEnd(p["leave_one_out"]);
    EXPECT_LE(p["proxy"]["rank"].get<int>(), 4);  // auto measures the proxy's top 4
  }
  EXPECT_EQ(measured, 4);
  EXPECT_EQ(f["measured_end_to_end"].size(), 4u);
  EXPECT_EQ(f["rankings"]["proxy"].size(), 16u);
  EXPECT_EQ(f["rankings"]["one_at_a_time"].size(), 4u);
  EXPECT_TRUE(f["spearman_proxy_vs_one_at_a_time"].is_number());
  EXPECT_EQ(f["spearman_parts"], 4);
  EXPECT_EQ(f["additivity"]["parts_measured"], 4);
  EXPECT_EQ(f["additivity"]["complete"], false);
  // The table: ranked worst first, the measured ones by one-at-a-time KLD.
  const std::string first = f["rankings"]["one_at_a_time"][0];
  EXPECT_NE(
      r.out.find("sensitivity of q4_0 against k=f32,v=f32,engine=llama.cpp: stage auto, 4 of 16 parts end to end"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("   1  " + first + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spearman proxy vs one-at-a-time"), std::string::npos) << r.out;

  // Rerun: both stages resume, the same results but the run block.
  const auto again = RunCli(cmd);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  nlohmann::json a = j, b = Results(out);
  EXPECT_EQ(b["run"]["windows_resumed"]["proxy"], 2);
  EXPECT_EQ(b["run"]["windows_resumed"]["parts"], 2);
  a.erase("run"), b.erase("run");
  EXPECT_TRUE(a == b);
  EXPECT_EQ(j["stages"]["proxy"], "proxy/results.json");  // relative to DIR
  EXPECT_EQ(j["stages"]["parts"], "auto/results.json");

  // A changed input is refused naming it, before anything runs.
  const auto other = RunCli(kArgs + "--formats q8_0 --ctx 256 --windows 2 --out " + out.string());
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("formats"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("--restart"), std::string::npos) << other.err;
  fs::remove_all(out);
}

// Same bytes for any --threads: the full stage at 1 and 2 threads.
TEST(SensitivityCliTest, FullStageIsTheSameForAnyThreadCount) {
  const fs::path one = testing::MakeTempDir("sens-t1"), two = testing::MakeTempDir("sens-t2");
  const std::string cmd = kArgs + "--stage full --ctx 128 --windows 1 --attn-samples 8 --json ";
  const auto r1 = RunCli(cmd + "--threads 1 --out " + one.string());
  const auto r2 = RunCli(cmd + "--threads 2 --out " + two.string());
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  nlohmann::json a = nlohmann::json::parse(r1.out), b = Results(two);
  EXPECT_EQ(a, Results(one));  // --json prints results.json
  EXPECT_EQ(a["formats"][0]["additivity"]["complete"], true);
  EXPECT_EQ(a["formats"][0]["rankings"]["one_at_a_time"].size(), 16u);
  a.erase("run"), b.erase("run");
  EXPECT_TRUE(a == b);  // (not EXPECT_EQ: a failure would print both documents)
  fs::remove_all(one), fs::remove_all(two);
}

TEST(SensitivityCliTest, BadInputIsOneLineAndExitTwo) {
  const fs::path out = testing::MakeTempDir("sens-bad");
  const std::string base = "sensitivity --model " + testing::BundledModelDir().string() + " --data " +
                           (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                           " --ctx 128 --windows 1 --out " + out.string() + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--formats q4_0,q9_0", "--formats: unknown format 'q9_0'"},
      {"--formats q4_0,k=q8_0", "is not a protection of q4_0"},
      {"", "--formats: no candidate format"},
      {"--formats q4_0 --stage most", "--stage most is not a stage"},
      {"--formats q4_0 --attn-samples 0", "leaves the proxy without its attention diagnosis"},
      {"--formats q4_0 --baseline \"k=f32,v=f32;layers=0:k=f16\"", "has per-layer overrides"},
      {"--formats q4_0,rot=5", "--formats \"rot=5\": rot=5 is not valid"},
      {"--formats q8_0 --baseline k=q8_0,v=q8_0", "is the baseline"},
      {"--formats q4_0 --first-window 100000", "--first-window 100000 is past the data's"},
  };
  for (const auto& [flags, needle] : cases) {
    const auto r = RunCli(base + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << flags << ": " << r.err;
    EXPECT_NE(r.err.find("hint: "), std::string::npos) << flags << ": " << r.err;
    EXPECT_EQ(r.err.rfind("kvaudit: error: ", 0), 0u) << r.err;  // stderr is the error line alone
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << flags << ": " << r.out;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kvaudit
