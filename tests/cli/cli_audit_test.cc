// `kvaudit audit` end to end on the bundled model (short windows and probes to stay fast): the
// verdict block, results.json, the CI files, `kvaudit gate` agreeing on the same directory, a
// resumed rerun giving the same verdicts, and bad input (one line, exit 2, nothing computed).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

const std::string kModelData = "--model " + testing::BundledModelDir().string() + " --data " +
                               (testing::RepoDir() / "data" / "eval-docs.jsonl").string();
const std::string kArgs =
    "audit " + kModelData +
    " --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --ctx 256 --windows 2 --calib-windows 2 --lengths 128 "
    "--attn-samples 4 --threads 2 ";

nlohmann::json Results(const fs::path& dir) {
  return nlohmann::json::parse(ReadFile((dir / "results.json").string()), nullptr, false);
}

TEST(AuditCliTest, VerdictBlockResultsGateAgreementAndResume) {
  const fs::path out = testing::MakeTempDir("audit-cli");
  const std::string cmd = kArgs + "--workload code --budget 1800 --out " + out.string();
  const auto r = RunCli(cmd, 900);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const nlohmann::json j = Results(out);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["kind"], "audit");
  EXPECT_EQ(j["workload"], "code");
  EXPECT_EQ(j["policy"], "strict");  // the code workload's preset
  EXPECT_EQ(j["target_context"], 256);
  EXPECT_EQ(j["probe_families"], nlohmann::json::array({"needle", "exact", "constraint", "drift"}));
  ASSERT_EQ(j["configs"].size(), 2u);
  // Measured as llama.cpp runs them, its default target for llama.cpp cache types.
  EXPECT_EQ(j["target"], "llama.cpp");
  EXPECT_EQ(j["configs"][0]["spec"], "k=q8_0,v=q8_0,engine=llama.cpp");
  EXPECT_EQ(j["configs"][0]["bytes_per_token"], 2176);
  EXPECT_EQ(j["configs"][1]["bytes_per_token"], 1152);
  int failed = 0;
  for (const nlohmann::json& c : j["configs"]) {
    failed += c["pass"].get<bool>() ? 0 : 1;
    EXPECT_EQ(c["pass"].get<bool>(), c["first_failure"].is_null()) << c.dump();
    const std::string line_start = c["spec"].get<std::string>();
    EXPECT_NE(r.out.find(line_start), std::string::npos);
  }
  EXPECT_EQ(j["failed"], failed);
  EXPECT_EQ(r.exit_code, failed > 0 ? 1 : 0);
  // q4_0 loses far more than strict's 0.002 nats; the verdict names the criterion.
  EXPECT_FALSE(j["configs"][1]["pass"].get<bool>());
  EXPECT_NE(j["configs"][1]["first_failure"].get<std::string>().find("kld_mean"), std::string::npos);
  EXPECT_NE(r.out.find("configurations pass policy strict"), std::string::npos) << r.out;
  ASSERT_TRUE(j["recommend"].is_object());
  EXPECT_EQ(j["recommend"]["budget_bytes_per_token"], 1800);
  const nlohmann::json rec = Results(out / "recommend");
  EXPECT_EQ(rec["kind"], "recommend");
  EXPECT_EQ(rec["held_out"]["first_window"], 0);     // verified on the audit's own windows
  EXPECT_EQ(rec["calibration"]["first_window"], 2);  // calibrated on the next ones
  for (const char* f : {"gate.xml", "summary.md", "eval/results.json", "probe/results.json"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  // The bundled 16M model fails the exact and constraint probes with the full-precision cache: no
  // signal, so their criteria are skipped cases in gate.xml, named in the verdict block, never green.
  const std::string xml = ReadFile((out / "gate.xml").string());
  EXPECT_NE(xml.find("<testsuites"), std::string::npos);
  for (const std::string family : {"exact", "constraint"}) {
    const std::string testcase = "<testcase classname=\"kvaudit.gate.k=q8_0,v=q8_0,engine=llama.cpp\" name=\"" +
                                 family + ".cache_induced_rate_max family " + family +
                                 "\">\n      <skipped message=\"no signal: the baseline passes 0 of ";
    EXPECT_NE(xml.find(testcase), std::string::npos) << family << "\n" << xml;
    EXPECT_NE(j["configs"][0]["no_signal"].dump().find(family + ": the baseline passes 0 of"), std::string::npos)
        << j["configs"][0].dump();
    EXPECT_NE(r.out.find(family + ": the baseline passes 0 of"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("\nno signal: "), std::string::npos) << r.out;
  // The probes' lengths are in the header, and a target context longer than the longest probe is
  // said once: the probe verdicts cover prompts up to it (--lengths 128 here, the context 256).
  EXPECT_NE(r.out.find("; probes: needle exact constraint drift at 128 tokens\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nprobes ran up to 128 tokens of the target context 256: nothing was probed beyond 128 "
                       "(--lengths with 256 probes it; the longest length costs the most).\n"),
            std::string::npos)
      << r.out;
  // summary.md names the context the verdicts are for, as the verdict block does.
  const std::string summary = ReadFile((out / "summary.md").string());
  EXPECT_NE(summary.find("Policy `strict`, target context: 256 tokens;"), std::string::npos) << summary;

  // kvaudit gate reads the audit directory and reaches the same verdicts.
  const auto gate = RunCli("gate --results " + out.string() + " --policy strict --json");
  EXPECT_EQ(gate.exit_code, r.exit_code) << gate.err;
  const nlohmann::json g = nlohmann::json::parse(gate.out, nullptr, false);
  ASSERT_FALSE(g.is_discarded()) << gate.out;
  ASSERT_EQ(g["configs"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(g.at("configs").at(i).at("config"), j["configs"][i]["spec"]);
    EXPECT_EQ(g.at("configs").at(i).at("verdict"), j["configs"][i]["verdict"]);
    EXPECT_EQ(g.at("configs").at(i).at("pass"), j["configs"][i]["pass"]);
  }
  // Without --policy it judges by the policy the audit recorded: the same verdicts, case by case,
  // for the context the audit judged (its --ctx: strict names none).
  const auto recorded = RunCli("gate --results " + out.string() + " --json");
  EXPECT_EQ(recorded.exit_code, gate.exit_code) << recorded.err;
  const nlohmann::json rg = nlohmann::json::parse(recorded.out, nullptr, false);
  ASSERT_FALSE(rg.is_discarded()) << recorded.out;
  EXPECT_EQ(rg["configs"], g["configs"]);
  EXPECT_EQ(rg["policy"], "strict");
  EXPECT_EQ(rg["target_context"], j["target_context"]);
  EXPECT_EQ(j["policy_text"].get<std::string>().rfind("# kvaudit preset \"strict\"", 0), 0u);

  // A rerun resumes every stage and reaches the same verdicts.
  const auto again = RunCli(cmd, 900);
  EXPECT_EQ(again.exit_code, r.exit_code) << again.err;
  const nlohmann::json k = Results(out);
  EXPECT_EQ(k["configs"], j["configs"]);
  EXPECT_EQ(k["recommend"], j["recommend"]);
  fs::remove_all(out);
}

TEST(AuditCliTest, BadInputIsOneLineAndExitTwoBeforeAnyCompute) {
  const fs::path out = testing::MakeTempDir("audit-bad");
  for (const auto& [args, what] : std::vector<std::pair<std::string, std::string>>{
           {"--workload poetry", "--workload poetry is not a workload"},
           {"--policy strcit", "strcit"},
           {"--kv k=q9_0,v=q8_0", "q9_0"},
           {"--budget 10", "below the smallest configuration"},
           {"--budget 12XB", "--budget"},
           {"--custom /nonexistent/probes.jsonl", "/nonexistent/probes.jsonl"},
       }) {
    const auto r = RunCli(kArgs + args + " --out " + (out / "run").string());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    EXPECT_FALSE(fs::exists(out / "run" / "eval" / "progress.jsonl")) << args << ": nothing may run";
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kvaudit
