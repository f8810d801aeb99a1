// `kvaudit eval` through deployed servers (docs/endpoints.md, docs/metrics.md
// "Fidelity through an endpoint"): `kvaudit serve` processes on loopback (f32 and q4_0 caches) as
// --endpoint and --baseline-endpoint. Top-1 agreement, ΔNLL (PPL ratio), Δp and top-5 drop come
// from the servers' prompt logprobs and equal the in-process eval's bit for bit, position by
// position; the KLD is a lower bound from the top-k logprobs, below the exact one. A resumed run
// equals a fresh one; what eval cannot do through an endpoint is one line and exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
const std::string kEval = "eval --model " + testing::BundledModelDir().string() + " --data " +
                          (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                          " --ctx 512 --windows 2 --threads 2 --bootstrap 200 --restart ";

std::string Url(const ServeProcess& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }
json Results(const fs::path& dir) { return json::parse(ReadFile((dir / "results.json").string()), nullptr, false); }

std::vector<json> Positions(const fs::path& file) {
  std::vector<json> rows;
  std::istringstream in(ReadFile(file.string()));
  for (std::string line; std::getline(in, line);) rows.push_back(json::parse(line));
  return rows;
}

// The exact metrics of one summary (overall or a bucket).
void ExpectExactEqual(const json& a, const json& b, const std::string& where) {
  for (const char* key : {"tokens", "top1_agree", "ppl_ratio", "delta_p_mean", "top5_drop"}) {
    if (a.contains(key) || b.contains(key)) {
      EXPECT_EQ(a.value(key, json()), b.value(key, json())) << where << " " << key;
    }
  }
}

class CliEvalEndpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = ServeProcess::Start({"--kv", "k=f32,v=f32"}).release();
    q4_ = ServeProcess::Start({"--kv", kQ4}).release();
    dir_ = new fs::path(testing::MakeTempDir("eval-endpoint"));
    const auto r = RunCli(kEval + "--kv " + kQ4 + " --attn-samples 0 --out " + (*dir_ / "local").string() +
                              " --jsonl " + (*dir_ / "local.jsonl").string(),
                          300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete base_, delete q4_, delete dir_; }
  static ServeProcess* base_;
  static ServeProcess* q4_;
  static fs::path* dir_;
};
ServeProcess* CliEvalEndpointTest::base_ = nullptr;
ServeProcess* CliEvalEndpointTest::q4_ = nullptr;
fs::path* CliEvalEndpointTest::dir_ = nullptr;

// Exact metrics equal in-process eval's, in every bucket and at every position; KLD a lower bound.
void ExpectMatchesInProcess(const fs::path& dir, const fs::path& local_dir, bool remote_baseline) {
  const json local = Results(local_dir / "local"), remote = Results(dir);
  ASSERT_FALSE(remote.is_discarded());
  const json& lc = local["configs"][0];
  const json& rc = remote["configs"][0];
  EXPECT_EQ(rc["spec"], "q4");
  EXPECT_TRUE(rc["bytes_per_token"].is_null());
  EXPECT_EQ(rc["endpoint"]["dialect"], "kvaudit");
  EXPECT_EQ(rc["kld_estimate"]["kind"], "lower_bound_from_top_k");
  EXPECT_EQ(rc["kld_estimate"]["top_logprobs"], 20);
  EXPECT_EQ(lc["kld_estimate"]["kind"], "exact");
  EXPECT_EQ(remote["baseline"]["ppl"], local["baseline"]["ppl"]);
  EXPECT_EQ(remote["baseline"]["nll_mean"], local["baseline"]["nll_mean"]);
  EXPECT_EQ(remote_baseline, remote["baseline"].contains("endpoint"));
  ExpectExactEqual(lc["overall"], rc["overall"], "overall");
  ASSERT_EQ(lc["buckets"].size(), rc["buckets"].size());
  for (size_t b = 0; b < lc["buckets"].size(); ++b)
    ExpectExactEqual(lc["buckets"][b], rc["buckets"][b], "bucket " + std::to_string(b));
  const double exact = lc["overall"]["kld_mean"], bound = rc["overall"]["kld_mean"];
  EXPECT_GT(bound, 0.5 * exact);  // top-20 holds most of the divergence on this model
  EXPECT_LE(bound, exact);
  const auto a = Positions(local_dir / "local.jsonl"), r = Positions(dir.string() + ".jsonl");
  ASSERT_EQ(a.size(), r.size());
  int below = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const char* key : {"token", "nll_base", "nll", "dp", "top1", "top5_drop"})
      EXPECT_EQ(a[i][key], r[i][key]) << i << key;
    const double k_exact = a[i]["kld"][0], k_bound = r[i]["kld"][0];
    EXPECT_LE(k_bound, k_exact * (1 + 1e-9) + 1e-15) << i;
    below += k_bound < k_exact;
  }
  EXPECT_GT(below, 0);
}

TEST_F(CliEvalEndpointTest, EndpointConfigurationAgainstInProcessBaseline) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path out = *dir_ / "remote";
  const auto r = RunCli(
      kEval + "--endpoint q4=" + Url(*q4_) + " --out " + out.string() + " --jsonl " + out.string() + ".jsonl", 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("lower bound from the top 20"), std::string::npos) << r.out;
  ExpectMatchesInProcess(out, *dir_, false);
  const json j = Results(out);
  ASSERT_TRUE(j.contains("notes"));  // the attention diagnosis (default on) is off through an endpoint
  EXPECT_NE(j["notes"][0].get<std::string>().find("attention"), std::string::npos);
}

// The gate judges an endpoint's eval, and every KLD case says it rests on a lower bound.
TEST_F(CliEvalEndpointTest, GateMarksTheKldOfAnEndpointAsALowerBound) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path out = *dir_ / "gated";
  ASSERT_EQ(RunCli(kEval + "--endpoint q4=" + Url(*q4_) + " --out " + out.string(), 300).exit_code, 0);
  std::ofstream(*dir_ / "policy.toml") << "[fidelity]\nkld_mean_max = 1.0\ntop1_agree_min = 0.5\n";
  const auto r = RunCli("gate --results " + out.string() + " --policy " + (*dir_ / "policy.toml").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  int kld_cases = 0, top1_cases = 0;
  for (const json& c : j["configs"][0]["cases"]) {
    const std::string text = c["text"];
    const bool marked = text.find("lower bound") != std::string::npos;
    if (c["criterion"] == "kld_mean_max") {
      ++kld_cases;
      EXPECT_TRUE(marked) << text;
    }
    if (c["criterion"] == "top1_agree_min") {
      ++top1_cases;
      EXPECT_FALSE(marked) << text;
    }
  }
  EXPECT_GT(kld_cases, 0);
  EXPECT_EQ(kld_cases, top1_cases);
}

TEST_F(CliEvalEndpointTest, EveryPartRemote) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path out = *dir_ / "both";
  // --parallel 2: two windows in flight; records still in window order.
  const auto r = RunCli(kEval + "--baseline-endpoint base=" + Url(*base_) + " --endpoint q4=" + Url(*q4_) +
                            " --parallel 2 --out " + out.string() + " --jsonl " + out.string() + ".jsonl",
                        300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectMatchesInProcess(out, *dir_, true);
  EXPECT_EQ(Results(out)["baseline"]["spec"], "base");
}

TEST_F(CliEvalEndpointTest, ResumedRunEqualsAFreshOne) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path out = *dir_ / "resumed";
  const std::string remote = "--endpoint q4=" + Url(*q4_) + " --out " + out.string();
  std::string first = kEval + remote;
  first.replace(first.find("--windows 2"), 11, "--windows 1");
  ASSERT_EQ(RunCli(first, 300).exit_code, 0);
  std::string again = kEval + remote;
  again.replace(again.find("--restart "), 10, "");
  const auto r = RunCli(again, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path fresh_dir = *dir_ / "fresh";
  ASSERT_EQ(RunCli(kEval + "--endpoint q4=" + Url(*q4_) + " --out " + fresh_dir.string(), 300).exit_code, 0);
  json resumed = Results(out), fresh = Results(fresh_dir);
  EXPECT_EQ(resumed["run"]["windows_resumed"], 1);
  for (json* j : {&resumed, &fresh}) j->erase("run");
  EXPECT_EQ(resumed["configs"][0]["overall"], fresh["configs"][0]["overall"]);
  EXPECT_EQ(resumed["configs"][0]["buckets"], fresh["configs"][0]["buckets"]);
}

TEST_F(CliEvalEndpointTest, WhatCannotRunIsOneLine) {
  ASSERT_TRUE(base_ && q4_);
  const std::string out = " --out " + (*dir_ / "refused").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--baseline-endpoint " + Url(*base_) + " --kv " + kQ4 + " --endpoint q4=" + Url(*q4_), "in-process"},
      {"--endpoint q4=" + Url(*q4_) + " --top-logprobs 3", "--top-logprobs 3"},
      {"--endpoint q4=" + Url(*q4_) + " --dialect openai", "no prompt logprobs"},
      {"--baseline-endpoint " + Url(*base_), "at least one --kv or --endpoint"},
      {"--endpoint q4=" + Url(*q4_) + " --parallel 2", "--parallel 2 needs --baseline-endpoint"},
  };
  for (const auto& [flags, says] : cases) {
    const auto r = RunCli(kEval + flags + out, 120);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace kvaudit
