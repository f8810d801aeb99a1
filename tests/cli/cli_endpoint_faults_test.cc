// An endpoint that misbehaves in the middle of a `kvaudit probe` run
// (docs/endpoints.md "Retry policy"): a proxy (support/fault_proxy.h) in front of a real
// `kvaudit serve` injects 500s, truncated JSON, dropped connections and answers slower than
// --request-timeout. Transient faults are retried and the run's outcomes equal the in-process
// run's; persistent ones stop the run with one line naming the URL, what happened and the attempts
// (exit 2), and what finished before stays in the journal.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/fault_proxy.h"
#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FaultProxy;
using testing::ReadFile;
using testing::RunCli;
using testing::ServeProcess;

const std::string kProbe = "probe --model " + testing::BundledModelDir().string() + " --data " +
                           (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                           " --threads 2 --family needle,exact --variant code,identifiers --lengths 256 "
                           "--depths 0,50,100 --restart --retries 3 --request-timeout 2 ";

json Results(const fs::path& dir) { return json::parse(ReadFile((dir / "results.json").string()), nullptr, false); }

std::string Via(const FaultProxy& p) { return "--endpoint q4=http://127.0.0.1:" + std::to_string(p.port()) + " "; }

class CliEndpointFaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    q4_ = ServeProcess::Start({"--kv", "k=q4_0,v=q4_0"}).release();
    dir_ = new fs::path(testing::MakeTempDir("endpoint-faults"));
    const auto r = RunCli(kProbe + "--kv k=q4_0,v=q4_0 --out " + (*dir_ / "local").string(), 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete q4_, delete dir_; }
  static ServeProcess* q4_;
  static fs::path* dir_;
};
ServeProcess* CliEndpointFaultsTest::q4_ = nullptr;
fs::path* CliEndpointFaultsTest::dir_ = nullptr;

TEST_F(CliEndpointFaultsTest, TransientFaultsAreRetriedAndChangeNothing) {
  ASSERT_TRUE(q4_);
  using testing::Answer, testing::Truncated, testing::Close, testing::Sleep;
  // Completions 2, 4, 6, 8 misbehave once each; every other one (and every retry) reaches the server.
  FaultProxy proxy(q4_->port(), "/v1/completions",
                   {std::nullopt, Answer(500, R"({"error": {"message": "CUDA error: out of memory"}})"), std::nullopt,
                    Truncated(), std::nullopt, Close(), std::nullopt, Sleep(3)},
                   std::nullopt);
  const fs::path out = *dir_ / "transient";
  const auto r = RunCli(kProbe + Via(proxy) + "--out " + out.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(proxy.faulted_requests(), 8);
  json local = Results(*dir_ / "local"), remote = Results(out);
  std::string text = local.dump();
  for (size_t at = text.find("k=q4_0,v=q4_0"); at != std::string::npos; at = text.find("k=q4_0,v=q4_0", at)) {
    text.replace(at, 13, "q4");
  }
  local = json::parse(text);
  for (const char* key : {"probes", "pooled", "worst_cases"}) EXPECT_EQ(local[key], remote[key]) << key;
}

struct Persistent {
  testing::FaultStep step;
  std::string says;
};

TEST_F(CliEndpointFaultsTest, PersistentFaultsAreOneLineAndExit2) {
  ASSERT_TRUE(q4_);
  const std::vector<Persistent> cases = {
      {testing::Answer(500, R"({"error": {"message": "CUDA error: out of memory"}})"), "HTTP 500 after 3 attempts"},
      {testing::Truncated(), "malformed JSON after 3 attempts"},
      {testing::Sleep(3), "after 3 attempts"},
      {testing::Answer(400, R"({"error": {"message": "prompt too long for this deployment"}})"),
       "prompt too long for this deployment"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    // Two completions go through (the first instance's two configurations), then every one fails.
    FaultProxy proxy(q4_->port(), "/v1/completions", {std::nullopt}, cases[i].step);
    const fs::path out = *dir_ / ("persistent-" + std::to_string(i));
    const auto r = RunCli(kProbe + Via(proxy) + "--out " + out.string(), 300);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find("http://127.0.0.1:" + std::to_string(proxy.port()) + "/v1/completions"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(cases[i].says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out / "results.json"));
  }
}

}  // namespace
}  // namespace kvaudit
