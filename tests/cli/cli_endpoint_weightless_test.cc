// All-remote audits load no weights (docs/endpoints.md): `kvaudit probe` and
// `kvaudit eval` with --baseline-endpoint and --endpoint only, given a directory that holds the
// bundled model's config.json and tokenizer files and no weights, run through two `kvaudit serve`
// processes (f32, q4_0) and give the in-process run's outcomes, with model_hash_kind
// "config+tokenizer" and the same model_hash as the full directory's all-remote run. A run with an
// in-process configuration given that directory is one line and exit 2; the gate compares the
// two hash kinds like with like with --model and refuses them without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

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
const std::string kData = " --data " + (testing::RepoDir() / "data" / "eval-docs.jsonl").string();
const std::string kProbe = kData + " --threads 2 --family needle,exact --lengths 256 --depths 0,100 --restart ";
const std::string kEval = kData + " --ctx 256 --windows 2 --threads 2 --bootstrap 100 --restart ";

json Results(const fs::path& dir) { return json::parse(ReadFile((dir / "results.json").string()), nullptr, false); }
std::string Url(const ServeProcess& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

// The in-process results with the specs renamed to the endpoints' names.
json Renamed(const json& j) {
  std::string text = j.dump();
  for (const auto& [from, to] : {std::pair<std::string, std::string>{kQ4, "q4"}, {"k=f32,v=f32", "base"}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return json::parse(text);
}

class CliEndpointWeightlessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = ServeProcess::Start({"--kv", "k=f32,v=f32"}).release();
    q4_ = ServeProcess::Start({"--kv", kQ4}).release();
    dir_ = new fs::path(testing::MakeTempDir("weightless"));
    // The bundled model's config and tokenizer, no model*.safetensors.
    fs::create_directories(*dir_ / "model");
    for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"}) {
      fs::create_symlink(fs::absolute(testing::BundledModelDir() / f), *dir_ / "model" / f);
    }
  }
  static void TearDownTestSuite() { delete base_, delete q4_, delete dir_; }
  static std::string Remote() {
    return " --baseline-endpoint base=" + Url(*base_) + " --endpoint q4=" + Url(*q4_) +
           " --retries 2 --request-timeout 60 ";
  }
  static std::string Weightless() { return " --model " + (*dir_ / "model").string(); }
  static std::string Full() { return " --model " + testing::BundledModelDir().string(); }
  static ServeProcess* base_;
  static ServeProcess* q4_;
  static fs::path* dir_;
};
ServeProcess* CliEndpointWeightlessTest::base_ = nullptr;
ServeProcess* CliEndpointWeightlessTest::q4_ = nullptr;
fs::path* CliEndpointWeightlessTest::dir_ = nullptr;

TEST_F(CliEndpointWeightlessTest, ProbeThroughEndpointsNeedsNoWeights) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path local = *dir_ / "probe-local", light = *dir_ / "probe-light", full = *dir_ / "probe-full";
  auto r = RunCli("probe" + Full() + kProbe + "--kv " + kQ4 + " --out " + local.string(), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli("probe" + Weightless() + kProbe + Remote() + "--out " + light.string(), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli("probe" + Full() + kProbe + Remote() + "--out " + full.string(), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json a = Renamed(Results(local)), b = Results(light), c = Results(full);
  ASSERT_FALSE(b.is_discarded() || c.is_discarded());
  ASSERT_FALSE(b["probes"].empty());
  for (const char* key : {"probes", "pooled", "worst_cases"}) {
    EXPECT_EQ(a[key], b[key]) << key;
    EXPECT_EQ(c[key], b[key]) << key;
  }
  EXPECT_EQ(b["configs"], c["configs"]);
  EXPECT_EQ(a["model_hash_kind"], "weights");
  EXPECT_EQ(b["model_hash_kind"], "config+tokenizer");
  EXPECT_EQ(c["model_hash_kind"], "config+tokenizer");  // all-remote loads no weights from a full directory either
  EXPECT_EQ(b["model_hash"], c["model_hash"]);
  EXPECT_NE(a["model_hash"], b["model_hash"]);
  // The in-process run holds the weights, its caches and activations; the remote one none of them.
  EXPECT_LT(b["run"]["peak_rss_mb"].get<double>(), a["run"]["peak_rss_mb"].get<double>());
}

TEST_F(CliEndpointWeightlessTest, EvalThroughEndpointsNeedsNoWeights) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path local = *dir_ / "eval-local", light = *dir_ / "eval-light", full = *dir_ / "eval-full";
  auto r = RunCli("eval" + Full() + kEval + "--kv " + kQ4 + " --attn-samples 0 --out " + local.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli("eval" + Weightless() + kEval + Remote() + "--out " + light.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli("eval" + Full() + kEval + Remote() + "--out " + full.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json a = Results(local), b = Results(light), c = Results(full);
  ASSERT_FALSE(b.is_discarded() || c.is_discarded());
  for (const char* key : {"tokens", "top1_agree", "ppl_ratio", "delta_p_mean", "top5_drop"}) {
    EXPECT_EQ(a["configs"][0]["overall"][key], b["configs"][0]["overall"][key]) << key;
  }
  EXPECT_EQ(a["baseline"]["ppl"], b["baseline"]["ppl"]);
  EXPECT_EQ(b["configs"], c["configs"]);
  EXPECT_EQ(b["baseline"], c["baseline"]);
  EXPECT_EQ(b["model_hash_kind"], "config+tokenizer");
  EXPECT_EQ(a["model_hash_kind"], "weights");
  EXPECT_EQ(b["model_hash"], c["model_hash"]);
  EXPECT_LT(b["run"]["peak_rss_mb"].get<double>(), a["run"]["peak_rss_mb"].get<double>());
}

// docs/decision.md "Gate": files of one hash kind are compared with each other and with --model's
// hash of that kind; the weights kind and the config+tokenizer kind are never compared directly.
TEST_F(CliEndpointWeightlessTest, GateComparesHashKindsLikeWithLike) {
  ASSERT_TRUE(base_ && q4_);
  const fs::path local = *dir_ / "gate-eval-local", eval = *dir_ / "gate-eval", probe = *dir_ / "gate-probe";
  auto r = RunCli("eval" + Full() + kEval + "--kv " + kQ4 + " --attn-samples 0 --out " + local.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli("eval" + Weightless() + kEval + Remote() + "--out " + eval.string(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli("probe" + Weightless() + kProbe + Remote() + "--out " + probe.string(), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string policy = (*dir_ / "policy.toml").string();
  std::ofstream(policy) << "[fidelity]\nkld_mean_max = 1.0\ntop1_agree_min = 0.5\n";
  const std::string remote = "gate --results " + eval.string() + " --results " + probe.string() + " --policy " + policy;
  // Both all-remote: checked against the weightless directory, and against the full one (no weight read for it).
  for (const std::string& model : {Weightless(), Full()}) {
    const auto g = RunCli(remote + model);
    EXPECT_TRUE(g.exit_code == 0 || g.exit_code == 1) << model << ": " << g.err;
    EXPECT_NE(g.out.find("q4"), std::string::npos) << g.out;
  }
  // An in-process eval (weights) beside an all-remote one (config+tokenizer): refused without --model ...
  const std::string mixed = "gate --results " + local.string() + " --results " + eval.string() + " --policy " + policy;
  const auto refused = RunCli(mixed);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find(eval.string() + "/results.json (model_hash of its config+tokenizer) and " +
                             local.string() + "/results.json (of its weights) cannot be compared"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  // ... with the full --model each matches it in its own kind (what stops the gate then is the
  // next rule: an in-process and a remote baseline are different baselines).
  const auto checked = RunCli(mixed + Full());
  EXPECT_EQ(checked.err.find("model_hash"), std::string::npos) << checked.err;
  EXPECT_EQ(checked.err.find("cannot be compared"), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("different baselines"), std::string::npos) << checked.err;
  // The weights kind needs the weights: the weightless directory cannot check the in-process eval.
  const auto needs = RunCli(mixed + Weightless());
  EXPECT_EQ(needs.exit_code, 2) << needs.err;
  EXPECT_NE(needs.err.find("no model.safetensors"), std::string::npos) << needs.err;
  // A tokenizer one merge short is another model's: the all-remote results are refused against it.
  const fs::path edited = *dir_ / "edited";
  fs::create_directories(edited);
  fs::create_symlink(fs::absolute(testing::BundledModelDir() / "config.json"), edited / "config.json");
  json tok = json::parse(ReadFile((testing::BundledModelDir() / "tokenizer.json").string()));
  tok["model"]["merges"].erase(tok["model"]["merges"].size() - 1);
  std::ofstream(edited / "tokenizer.json") << tok.dump();
  const auto other = RunCli(remote + " --model " + edited.string());
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("is from another model (model_hash "), std::string::npos) << other.err;
  EXPECT_NE(other.err.find(" of its config+tokenizer, --model " + edited.string() + " is "), std::string::npos)
      << other.err;
}

TEST_F(CliEndpointWeightlessTest, InProcessConfigurationWithoutWeightsIsOneLine) {
  ASSERT_TRUE(base_ && q4_);
  const std::string model = (*dir_ / "model").string();
  const auto probe = RunCli(
      "probe" + Weightless() + kProbe + Remote() + "--kv " + kQ4 + " --out " + (*dir_ / "mixed-probe").string(), 120);
  EXPECT_EQ(probe.exit_code, 2) << probe.err;
  EXPECT_NE(probe.err.find(model + ": --kv " + kQ4 + " runs in-process and needs the weights"), std::string::npos)
      << probe.err;
  EXPECT_NE(probe.err.find("hint: "), std::string::npos) << probe.err;
  EXPECT_EQ(std::count(probe.err.begin(), probe.err.end(), '\n'), 1) << probe.err;
  // Eval with an in-process baseline and an endpoint: the baseline must run here.
  const auto eval = RunCli(
      "eval" + Weightless() + kEval + "--endpoint q4=" + Url(*q4_) + " --out " + (*dir_ / "mixed-eval").string(), 120);
  EXPECT_EQ(eval.exit_code, 2) << eval.err;
  EXPECT_NE(eval.err.find("the baseline k=f32,v=f32 (no --baseline-endpoint) runs in-process and needs the weights"),
            std::string::npos)
      << eval.err;
  EXPECT_EQ(std::count(eval.err.begin(), eval.err.end(), '\n'), 1) << eval.err;
}

}  // namespace
}  // namespace kvaudit
