// `kvaudit probe` through deployed servers (docs/endpoints.md): two `kvaudit serve`
// processes on loopback (an f32 and a q4_0 cache, OS-chosen ports) as --baseline-endpoint and
// --endpoint give the same outcomes as the in-process run of the same probes: every text, every
// pass/fail, every attribution count, the variance samples. The candidate killed in the middle of
// a run: the client says so in one line (exit 2), and the rerun against a restarted server (on
// another port: a run is tied to the endpoint's name, not its address) resumes and finishes with
// the uninterrupted run's results.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/child_process.h"
#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadFile;
using testing::RunCli;
using testing::ServeProcess;

const std::string kQ4 = "k=q4_0,v=q4_0";
const std::string kCommon =
    "--model " + testing::BundledModelDir().string() + " --data " +
    (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
    " --threads 2 --family needle,exact,constraint,variance --lengths 256,512 --depths 0,50,100 "
    "--samples 2 --variance-tokens 8 --restart ";

std::string Url(const ServeProcess& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

std::string Remote(const ServeProcess& base, const ServeProcess& q4) {
  return "--baseline-endpoint base=" + Url(base) + " --endpoint q4=" + Url(q4) + " --retries 2 --request-timeout 60 ";
}

json Results(const fs::path& dir) { return json::parse(ReadFile((dir / "results.json").string()), nullptr, false); }

// The in-process run's results with its specs renamed to the endpoints' names, so the two can be
// compared key for key.
json Renamed(const json& j) {
  std::string text = j.dump();
  for (const auto& [from, to] : {std::pair<std::string, std::string>{kQ4, "q4"}, {"k=f32,v=f32", "base"}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return json::parse(text);
}

// Every outcome the probes produce, without the run's metadata (paths, timings, the configs'
// memory/endpoint descriptions).
void ExpectSameOutcomes(const json& in_process, const json& remote) {
  const json a = Renamed(in_process);
  for (const char* key : {"probes", "pooled", "variance", "worst_cases", "drift"}) {
    EXPECT_EQ(a[key], remote[key]) << key;
  }
  EXPECT_EQ(remote["baseline"], "base");
  ASSERT_EQ(remote["configs"].size(), 1u);
  EXPECT_EQ(remote["configs"][0]["spec"], "q4");
  EXPECT_TRUE(remote["configs"][0]["bytes_per_token"].is_null());
  EXPECT_EQ(remote["configs"][0]["endpoint"]["dialect"], "kvaudit");
  EXPECT_EQ(remote["configs"][0]["endpoint"]["ids_retokenized"], false);
  EXPECT_EQ(remote["configs"][0]["endpoint"]["tokenizer_check"]["checked"], true);
  EXPECT_EQ(remote["baseline_endpoint"]["name"], "base");
}

// The journal's records by id: each run's text and verdict under each configuration.
std::map<std::string, json> Journal(const fs::path& dir) {
  std::map<std::string, json> out;
  std::istringstream in(ReadFile((dir / "progress.jsonl").string()));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("id")) out[j["id"].get<std::string>()] = j;
  }
  return out;
}

// The ids of the journal's records, in the order they were written.
std::vector<std::string> IdsInOrder(const fs::path& dir) {
  std::vector<std::string> ids;
  std::istringstream in(ReadFile((dir / "progress.jsonl").string()));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("id")) ids.push_back(j["id"]);
  }
  return ids;
}

class CliProbeEndpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    in_process_ = new fs::path(testing::MakeTempDir("probe-inproc"));
    const auto r = RunCli("probe " + kCommon + "--kv " + kQ4 + " --out " + in_process_->string(), 600);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete in_process_; }
  static fs::path* in_process_;
};
fs::path* CliProbeEndpointTest::in_process_ = nullptr;

// --parallel sends several instances at once; the journal is still written in instance order.
class CliProbeEndpointParallelTest : public CliProbeEndpointTest, public ::testing::WithParamInterface<int> {};

TEST_P(CliProbeEndpointParallelTest, TwoServersGiveTheInProcessOutcomes) {
  const std::string parallel = std::to_string(GetParam());
  auto base = ServeProcess::Start({"--kv", "k=f32,v=f32", "--parallel", parallel});
  auto q4 = ServeProcess::Start({"--kv", kQ4, "--parallel", parallel});
  ASSERT_TRUE(base && q4);
  const fs::path out = testing::MakeTempDir("probe-remote");
  const auto r =
      RunCli("probe " + kCommon + Remote(*base, *q4) + "--parallel " + parallel + " --out " + out.string(), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json local = Results(*in_process_), remote = Results(out);
  ASSERT_FALSE(remote.is_discarded());
  ExpectSameOutcomes(local, remote);
  // Texts too, record by record (the results hold only the worst cases' texts).
  const auto a = Journal(*in_process_), b = Journal(out);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [id, rec] : a) {
    ASSERT_TRUE(b.count(id)) << id;
    EXPECT_EQ(Renamed(rec), b.at(id)) << id;
  }
  // The q4_0 cache changes some output, or equal outcomes would prove little.
  int differing = 0;
  for (const auto& [id, rec] : b) {
    if (rec.contains("runs") && rec["runs"].size() == 2 && rec["runs"][0] != rec["runs"][1]) ++differing;
  }
  EXPECT_GT(differing, 0);
  // The journal's records in instance order, whatever finished first.
  EXPECT_EQ(IdsInOrder(*in_process_), IdsInOrder(out));
}

INSTANTIATE_TEST_SUITE_P(Parallel, CliProbeEndpointParallelTest, ::testing::Values(1, 4));

// Drift through endpoints: the same greedy paths and divergence figures as in-process; the KL
// along the path comes from the servers' prompt logprobs (top 20), a lower bound of the exact one.
TEST(CliProbeEndpointDriftTest, SamePathsAndALowerBoundKl) {
  const std::string drift = "probe --model " + testing::BundledModelDir().string() + " --data " +
                            (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                            " --threads 2 --family drift --lengths 256,512 --n 2 --drift-tokens 24 --restart ";
  const fs::path local_dir = testing::MakeTempDir("drift-local"), remote_dir = testing::MakeTempDir("drift-remote");
  ASSERT_EQ(RunCli(drift + "--kv " + kQ4 + " --out " + local_dir.string(), 300).exit_code, 0);
  auto base = ServeProcess::Start({"--kv", "k=f32,v=f32"});
  auto q4 = ServeProcess::Start({"--kv", kQ4});
  ASSERT_TRUE(base && q4);
  const auto r = RunCli(drift + Remote(*base, *q4) + "--out " + remote_dir.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json local = Results(local_dir)["drift"], remote = Results(remote_dir)["drift"];
  ASSERT_EQ(local.size(), 2u);
  ASSERT_EQ(remote.size(), local.size());
  bool some_below = false;
  for (size_t i = 0; i < local.size(); ++i) {
    for (const char* key : {"length", "n", "identical", "first_divergence_mean", "edit_distance_mean",
                            "baseline_repetition", "config_repetition"}) {
      EXPECT_EQ(local[i][key], remote[i][key]) << i << " " << key;
    }
    EXPECT_EQ(local[i]["kl_estimate"], "exact");
    EXPECT_EQ(remote[i]["kl_estimate"], "lower_bound_from_top_k");
    const double exact = local[i]["kl_mean"], bound = remote[i]["kl_mean"];
    EXPECT_GT(bound, 0.0);
    EXPECT_LE(bound, exact * (1 + 1e-9));
    EXPECT_LE(remote[i]["kl_max"].get<double>(), local[i]["kl_max"].get<double>() * (1 + 1e-9));
    some_below = some_below || bound < exact;
  }
  EXPECT_TRUE(some_below);
  // A server without prompt logprobs (an OpenAI-compatible one of unknown make) cannot take part in
  // drift: named, one line, exit 2.
  const auto refused = RunCli(drift + Remote(*base, *q4) + "--dialect openai --out " + remote_dir.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("returns no prompt logprobs"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find('\n'), refused.err.size() - 1) << refused.err;
}

TEST_F(CliProbeEndpointTest, ParallelNeedsEveryPartRemote) {
  const auto r =
      RunCli("probe " + kCommon + "--kv " + kQ4 + " --parallel 2 --out " + testing::MakeTempDir("probe-par").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--parallel 2 needs the baseline and every configuration to be endpoints"), std::string::npos)
      << r.err;
}

TEST_F(CliProbeEndpointTest, KilledCandidateIsOneLineAndTheRerunResumesIdentically) {
  auto base = ServeProcess::Start({"--kv", "k=f32,v=f32"});
  auto q4 = ServeProcess::Start({"--kv", kQ4});
  ASSERT_TRUE(base && q4);
  const fs::path out = testing::MakeTempDir("probe-killed");
  std::vector<std::string> argv = {KVAUDIT_BINARY, "probe"};
  {
    std::istringstream words(kCommon + Remote(*base, *q4) + "--out " + out.string());
    for (std::string w; words >> w;) argv.push_back(w);
  }
  auto probe = testing::ChildProcess::Start(argv);
  ASSERT_TRUE(probe);
  // Wait (bounded: 300 s) until a few instances are journaled, then kill the candidate server.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(out / "progress.jsonl") && Journal(out).size() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(Journal(out).size(), 3u);
  q4->child().Signal(SIGKILL);
  const std::optional<int> rc = probe->WaitExit(120000);
  ASSERT_TRUE(rc.has_value()) << "probe did not stop after its endpoint died";
  EXPECT_EQ(*rc, 2) << probe->Stderr();
  const std::string err = probe->Stderr();
  EXPECT_NE(err.find("http://127.0.0.1:" + std::to_string(q4->port())), std::string::npos) << err;
  EXPECT_NE(err.find("attempts"), std::string::npos) << err;
  const size_t journaled = Journal(out).size();
  EXPECT_FALSE(fs::exists(out / "results.json"));

  auto restarted = ServeProcess::Start({"--kv", kQ4});  // port 0: another port than before
  ASSERT_TRUE(restarted);
  std::string again = "probe " + kCommon + Remote(*base, *restarted) + "--out " + out.string();
  again.replace(again.find("--restart "), 10, "");  // resume, not start over
  const auto r = RunCli(again, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json resumed = Results(out);
  ExpectSameOutcomes(Results(*in_process_), resumed);
  EXPECT_EQ(resumed["run"]["instances_resumed"], static_cast<int>(journaled));
}

}  // namespace
}  // namespace kvaudit
