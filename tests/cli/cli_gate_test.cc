// `kvaudit gate` through the real binary: exit 0 / 1 / 2 on synthetic results written here, the
// JUnit and markdown files, --json, one-line exit-2 errors for bad input (a policy typo, results
// of another model, a missing family, another schema_version), and one end-to-end run on the
// bundled model: real eval and probe with tiny settings, gated.
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/gate_results.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;

constexpr const char* kPolicy =
    "[fidelity]\nkld_mean_max = 0.005\n[probes.needle]\nrequired = true\ncache_induced_rate_max = 0.1\n";

std::vector<testing::SyntheticBucket> Buckets(double kld) { return {{1, 16, kld}, {17, 32, kld}}; }
// 40 needle instances: 0 lost is within 0.1 (Clopper-Pearson up to 0.088), 12 lost beyond it (from 0.166).
ProbeConfigResult Needle(const std::string& spec, int induced) {
  return {spec, {{"needle", 40, induced, 0, 1.0, false}}, 0, 0, 0, {}};
}

// An eval and a probe directory with q8_0 (within the policy) and, with `fail`, q4_0 (not).
fs::path Results(bool fail, const std::string& model_hash = testing::kSyntheticModelHash) {
  const fs::path dir = testing::MakeTempDir("gate-cli");
  std::vector<testing::SyntheticEvalConfig> eval = {{"k=q8_0,v=q8_0", Buckets(0.0002)}};
  std::vector<ProbeConfigResult> probe = {Needle("k=q8_0,v=q8_0", 0)};
  if (fail) eval.push_back({"k=q4_0,v=q4_0", Buckets(0.05)}), probe.push_back(Needle("k=q4_0,v=q4_0", 12));
  testing::WriteResults(dir / "eval", testing::SyntheticEvalResults(eval, model_hash));
  testing::WriteResults(dir / "probe", testing::SyntheticProbeResults(probe, model_hash));
  std::ofstream(dir / "policy.toml") << kPolicy;
  return dir;
}

std::string Gate(const fs::path& dir, const std::string& extra = "") {
  return "gate --results " + (dir / "eval").string() + " --results " + (dir / "probe").string() + " --policy " +
         (dir / "policy.toml").string() + " " + extra;
}

void ExpectOneLineError(const testing::CliResult& r, const std::string& piece) {
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_EQ(r.err.rfind("kvaudit: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find(piece), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hint: "), std::string::npos) << r.err;
}

TEST(GateCliTest, ExitsZeroWhenEveryConfigurationPasses) {
  const fs::path dir = Results(false);
  const auto r = RunCli(Gate(dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("k=q8_0,v=q8_0  PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gate: PASS: 0 of 1 configurations fail"), std::string::npos) << r.out;
  // The same directory as an audit layout (eval/ and probe/ below one --results).
  const auto audit = RunCli("gate --results " + dir.string() + " --policy " + (dir / "policy.toml").string());
  EXPECT_EQ(audit.exit_code, 0) << audit.err;
}

TEST(GateCliTest, ExitsOneWhenAnyFailsAndWritesJunitAndMarkdown) {
  const fs::path dir = Results(true);
  const fs::path junit = dir / "gate.xml", md = dir / "gate.md";
  const auto r = RunCli(Gate(dir, "--junit " + junit.string() + " --markdown " + md.string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("k=q4_0,v=q4_0  FAIL"), std::string::npos) << r.out;
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.LoadFile(junit.c_str()), tinyxml2::XML_SUCCESS) << doc.ErrorStr();
  const tinyxml2::XMLElement* root = doc.FirstChildElement("testsuites");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->IntAttribute("tests"), 6);                           // per configuration: 2 buckets + needle rate
  EXPECT_EQ(root->IntAttribute("failures"), 3);                        // q4_0: both buckets and the needle rate
  for (const auto& e : fs::directory_iterator(junit.parent_path())) {  // no temporary left behind
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  }
  const std::string markdown = testing::ReadFile(md.string());
  EXPECT_NE(markdown.find("| `k=q4_0,v=q4_0` | **FAIL** | none |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("### Failing and inconclusive cases"), std::string::npos) << markdown;
}

TEST(GateCliTest, JsonIsOneDocument) {
  const auto r = RunCli(Gate(Results(true), "--json"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["pass"], false);
  ASSERT_EQ(j["configs"].size(), 2u);
  EXPECT_EQ(j["configs"][1]["first_failure"]["criterion"], "kld_mean_max");
  EXPECT_EQ(j["configs"][1]["first_failure"]["from"], 1);
}

TEST(GateCliTest, BadInputIsOneLineAndExitTwo) {
  const fs::path dir = Results(true);
  // A typo in the policy, with its position and the nearest key.
  std::ofstream(dir / "typo.toml") << "[fidelity]\nkld_mean_mx = 0.005\n";
  ExpectOneLineError(RunCli("gate --results " + dir.string() + " --policy " + (dir / "typo.toml").string()),
                     (dir / "typo.toml").string() + ":2:1; hint: did you mean kld_mean_max?");
  // A preset name with a typo.
  ExpectOneLineError(RunCli("gate --results " + dir.string() + " --policy balnced"), "did you mean balanced?");
  // No --policy on results that recorded none (only an audit directory records its policy).
  ExpectOneLineError(RunCli("gate --results " + (dir / "eval").string()),
                     "without --policy: only an audit directory records its policy; hint: pass --policy");
  // Results of another model than --model.
  ExpectOneLineError(RunCli(Gate(dir, "--model " + testing::BundledModelDir().string())), "is from another model");
  // Eval and probe results of two models.
  const fs::path other = Results(true, "ffffffffffffffff");
  ExpectOneLineError(RunCli("gate --results " + (dir / "eval").string() + " --results " + (other / "probe").string() +
                            " --policy " + (dir / "policy.toml").string()),
                     "are from different models");
  // A required family the probe run does not have.
  testing::WriteResults(dir / "noneedle", testing::SyntheticProbeResults({{"k=q8_0,v=q8_0", {}, 0, 0, 0, {}}}));
  ExpectOneLineError(RunCli("gate --results " + (dir / "eval").string() + " --results " + (dir / "noneedle").string() +
                            " --policy " + (dir / "policy.toml").string()),
                     "requires the probe family needle");
  // Another schema_version.
  nlohmann::json v3 = testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets(0.0)}});
  v3["schema_version"] = 3;
  testing::WriteResults(dir / "v3", v3);
  ExpectOneLineError(RunCli("gate --results " + (dir / "v3").string() + " --policy balanced"), "schema_version 3");
  // No --policy at all.
  ExpectOneLineError(RunCli("gate --results " + dir.string()), "--policy");
  // --junit into a directory that does not exist: nothing is judged or written.
  ExpectOneLineError(RunCli(Gate(dir, "--junit " + (dir / "nope" / "g.xml").string())), "does not exist");
}

// Real eval and probe runs on the bundled model, tiny settings (seconds), gated by a policy whose
// fidelity threshold sits between q8_0's and q4_0's mean KLD (docs/formats.md: 0.0002 vs 0.05).
TEST(GateCliTest, BundledModelQ8PassesAndQ4FailsEndToEnd) {
  const fs::path dir = testing::MakeTempDir("gate-e2e");
  const std::string model = testing::BundledModelDir().string();
  const std::string common = "--model " + model + " --data " +
                             (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                             " --threads 2 --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 ";
  const auto eval =
      RunCli("eval " + common + "--ctx 256 --windows 2 --attn-samples 0 --out " + (dir / "eval").string(), 300);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  const auto probe = RunCli("probe " + common +
                                "--family needle,drift --variant code --lengths 256 --depths 0,100 "
                                "--drift-tokens 8 --out " +
                                (dir / "probe").string(),
                            300);
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  std::ofstream(dir / "policy.toml") << "[fidelity]\nkld_mean_max = 0.005\n"
                                        "[probes.needle]\nrequired = true\ncache_induced_rate_max = 1.0\n"
                                        "[probes.drift]\nrequired = true\nkl_mean_max = 1.0\n";
  const auto r = RunCli("gate --results " + (dir / "eval").string() + " --results " + (dir / "probe").string() +
                        " --policy " + (dir / "policy.toml").string() + " --model " + model + " --json");
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["configs"].size(), 2u);
  const nlohmann::json &q8 = j["configs"][0], &q4 = j["configs"][1];
  EXPECT_EQ(q8["config"], "k=q8_0,v=q8_0");
  EXPECT_EQ(q8["verdict"], "PASS") << q8.dump(2);
  EXPECT_EQ(q8["safe_up_to_is_all_measured"], true);
  EXPECT_EQ(q4["verdict"], "FAIL") << q4.dump(2);
  EXPECT_EQ(q4["first_failure"]["criterion"], "kld_mean_max");
  // Every judged case: 5 buckets (1-16 .. 129-256) + needle rate + drift, per configuration.
  EXPECT_EQ(q8["cases"].size(), 7u);
  for (const auto& c : q8["cases"]) {
    if (c["criterion"] == "kld_mean_max") {
      EXPECT_LT(c["measured"].get<double>(), 0.005) << c.dump();
    }
  }
  // Every case but drift's carries the 95% interval it was judged by, around its measured value.
  for (const nlohmann::json* config : {&q8, &q4}) {
    for (const auto& c : (*config)["cases"]) {
      if (c["criterion"] == "drift.kl_mean_max") {
        EXPECT_TRUE(c["interval"].is_null()) << c.dump();
        continue;
      }
      ASSERT_TRUE(c["interval"].is_array()) << c.dump();
      EXPECT_LE(c["interval"][0].get<double>(), c["measured"].get<double>()) << c.dump();
      EXPECT_GE(c["interval"][1].get<double>(), c["measured"].get<double>()) << c.dump();
    }
  }
}

// The baseline's own arithmetic against itself never fails, under strict's fidelity thresholds
// too: its intervals are the points KLD 0 and PPL ratio 1, its top-1 interval Wilson's over the
// 512 scored tokens (from 0.993), pooled to the 150 tokens strict's top1_agree_min needs.
TEST(GateCliTest, TheBaselineAgainstItselfPassesStrict) {
  const fs::path dir = testing::MakeTempDir("gate-self");
  const auto eval = RunCli("eval --model " + testing::BundledModelDir().string() + " --data " +
                               (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                               " --threads 2 --kv k=f32,v=f32 --ctx 256 --windows 2 --attn-samples 0 --out " +
                               (dir / "eval").string(),
                           300);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  std::ofstream(dir / "policy.toml") << "extends = \"strict\"\n[probes.needle]\nrequired = false\n"
                                        "[probes.drift]\nrequired = false\n";
  const auto r = RunCli("gate --results " + (dir / "eval").string() + " --policy " + (dir / "policy.toml").string());
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("k=f32,v=f32    PASS"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kvaudit
