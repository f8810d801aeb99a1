// A frozen reference (`kvaudit reference`, `eval --reference`; docs/endpoints.md "A frozen
// reference"): made once — in process and through a baseline server, the same rows — then reused
// by three evals of endpoint configurations (kvaudit serve with q4_0 and q8_0 caches), each giving
// the numbers of the same eval against the live baseline server, bit for bit, and by an in-process
// configuration. A reference made for other windows, context or positions, or a cut file, is one
// line and exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/reference_file.h"
#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunCli;
using testing::ServeProcess;

const std::string kInputs = "--model " + testing::BundledModelDir().string() + " --data " +
                            (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                            " --ctx 256 --windows 2 --score-from 16 --threads 2 --top-logprobs 20 ";

std::string Url(const ServeProcess& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

json Configs(const fs::path& dir) {
  std::ifstream in(dir / "results.json");
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return ADD_FAILURE() << "no results in " << dir, json();
  json out = json::object();
  for (const json& c : j["configs"]) out[c["spec"].get<std::string>()] = c["overall"];
  return out;
}

void ExpectOneLine(const testing::CliResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

TEST(ReferenceCliTest, MadeOnceReusedByThreeEvalsWithTheLiveBaselinesNumbers) {
  auto base = ServeProcess::Start({"--kv", "k=f32,v=f32"});
  auto q4 = ServeProcess::Start({"--kv", "k=q4_0,v=q4_0"});
  auto q8 = ServeProcess::Start({"--kv", "k=q8_0,v=q8_0"});
  ASSERT_TRUE(base && q4 && q8);
  const fs::path dir = testing::MakeTempDir("reference");
  const std::string ref = (dir / "f32.kvref").string(), served_ref = (dir / "served.kvref").string();

  const auto made = RunCli("reference " + kInputs + "--out " + ref, 300);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("2 windows, 478 positions, top 20"), std::string::npos) << made.out;
  const auto served =
      RunCli("reference " + kInputs + "--baseline-endpoint base=" + Url(*base) + " --out " + served_ref);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  // kvaudit serve's prompt logprobs are the in-process log-softmax bit for bit: the same rows.
  const auto a = ReadReference(ref), b = ReadReference(served_ref);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->windows.size(), 2u);
  for (size_t w = 0; w < 2; ++w) {
    EXPECT_EQ(a->windows[w].ids, b->windows[w].ids);
    ASSERT_EQ(a->windows[w].rows.size(), b->windows[w].rows.size());
    for (size_t i = 0; i < a->windows[w].rows.size(); ++i) {
      EXPECT_EQ(a->windows[w].rows[i].logprob, b->windows[w].rows[i].logprob);
      EXPECT_EQ(a->windows[w].rows[i].top, b->windows[w].rows[i].top);
    }
  }

  // The live baseline server, once, for the numbers the reference must give.
  const std::string eps = " --endpoint q4=" + Url(*q4) + " --endpoint q8=" + Url(*q8);
  const auto live =
      RunCli("eval " + kInputs + "--baseline-endpoint base=" + Url(*base) + eps + " --out " + (dir / "live").string());
  ASSERT_EQ(live.exit_code, 0) << live.err;
  const json expected = Configs(dir / "live");
  // Three evals against the one reference: q4 alone, q8 alone, both.
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {" --endpoint q4=" + Url(*q4), {"q4"}}, {" --endpoint q8=" + Url(*q8), {"q8"}}, {eps, {"q4", "q8"}}};
  for (size_t i = 0; i < runs.size(); ++i) {
    const fs::path out = dir / ("frozen" + std::to_string(i));
    const auto r = RunCli("eval " + kInputs + "--reference " + ref + runs[i].first + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json got = Configs(out);
    for (const std::string& name : runs[i].second) EXPECT_EQ(got[name], expected[name]) << name << " in run " << i;
  }

  // An in-process configuration against the reference: the server's q4_0 cache computed here, so
  // top-1 and the PPL ratio are the served ones exactly; its KLD bound knows the reference's top k
  // against the whole in-process distribution, so it is at least the served one's (which knows only
  // both top-k lists) and at most the exact KLD against the live in-process baseline.
  const auto local =
      RunCli("eval " + kInputs + "--reference " + ref + " --kv k=q4_0,v=q4_0 --out " + (dir / "local").string());
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto exact =
      RunCli("eval " + kInputs + "--kv k=q4_0,v=q4_0 --attn-samples 0 --out " + (dir / "exact").string());
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  const json in_ref = Configs(dir / "local")["k=q4_0,v=q4_0"], in_live = Configs(dir / "exact")["k=q4_0,v=q4_0"];
  EXPECT_EQ(in_ref["top1_agree"], expected["q4"]["top1_agree"]);
  EXPECT_EQ(in_ref["ppl_ratio"], expected["q4"]["ppl_ratio"]);
  EXPECT_EQ(in_ref["top1_agree"], in_live["top1_agree"]);
  EXPECT_GE(in_ref["kld_mean"].get<double>(), expected["q4"]["kld_mean"].get<double>() * (1 - 1e-12));
  EXPECT_LE(in_ref["kld_mean"].get<double>(), in_live["kld_mean"].get<double>() * (1 + 1e-12));

  // What does not match the reference is one line.
  ExpectOneLine(RunCli("eval " + kInputs + "--reference " + ref + " --baseline-endpoint base=" + Url(*base) + eps +
                       " --out " + (dir / "x").string()),
                "are two baselines");
  const std::string other_ctx = "eval --model " + testing::BundledModelDir().string() + " --data " +
                                (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                                " --ctx 128 --windows 2 --score-from 16 --threads 2 --reference " + ref + eps;
  ExpectOneLine(RunCli(other_ctx + " --out " + (dir / "y").string()), "made at --ctx 256");
  ExpectOneLine(
      RunCli("eval " + kInputs + "--first-window 5 --reference " + ref + eps + " --out " + (dir / "z").string()),
      "it has no window 5");
  {
    std::ifstream in(ref, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.kvref", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  ExpectOneLine(RunCli("eval " + kInputs + "--reference " + (dir / "cut.kvref").string() + eps + " --out " +
                       (dir / "w").string()),
                "cut.kvref: ");
  fs::remove_all(dir);
}

// audit --reference: the audit's eval stage compares against the frozen baseline (its probes run
// the in-process one), and gives the numbers `eval --reference` gives for the same configuration.
TEST(ReferenceCliTest, AnAuditsEvalStageTakesTheReference) {
  auto q4 = ServeProcess::Start({"--kv", "k=q4_0,v=q4_0"});
  ASSERT_TRUE(q4);
  const fs::path dir = testing::MakeTempDir("reference-audit");
  const std::string inputs = "--model " + testing::BundledModelDir().string() + " --data " +
                             (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                             " --ctx 256 --windows 2 --threads 2 --top-logprobs 20 ";
  const std::string ref = (dir / "f32.kvref").string(), q4_url = " --endpoint q4=" + Url(*q4);
  ASSERT_EQ(RunCli("reference " + inputs + "--out " + ref, 300).exit_code, 0);
  const auto audit = RunCli("audit " + inputs + "--lengths 256 --policy balanced --reference " + ref + q4_url +
                                " --out " + (dir / "audit").string(),
                            300);
  ASSERT_TRUE(audit.exit_code == 0 || audit.exit_code == 1) << audit.err;
  const auto eval = RunCli("eval " + inputs + "--reference " + ref + q4_url + " --out " + (dir / "eval").string());
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_EQ(Configs(dir / "audit" / "eval")["q4"], Configs(dir / "eval")["q4"]);
  EXPECT_FALSE(Configs(dir / "eval")["q4"].is_null());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
