// `kvaudit recommend` end to end on the bundled model (short windows to stay fast): the verified
// points carry their held-out numbers and verdicts, the recommendation agrees with the exit code,
// a second budget reuses the sensitivity run, and bad input is one line with exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

const std::string kArgs = "recommend --model " + testing::BundledModelDir().string() + " --data " +
                          (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                          " --ctx 256 --windows 2 --lengths 128 --threads 2 ";

nlohmann::json Results(const fs::path& dir) {
  return nlohmann::json::parse(ReadFile((dir / "results.json").string()), nullptr, false);
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(RecommendCliTest, VerifiedPointsHeldOutNumbersAndTheRecommendation) {
  const fs::path out = testing::MakeTempDir("rec-cli");
  const auto r = RunCli(kArgs + "--calib-windows 2 --policy balanced --budget 1800 --out " + out.string(), 600);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const nlohmann::json j = Results(out);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["kind"], "recommend");
  EXPECT_EQ(j["budget"]["bytes_per_token"], 1800);
  EXPECT_EQ(j["f16_bytes_per_token"], 4096);
  EXPECT_EQ(j["smallest_bytes_per_token"], 1152);  // q4_0 everywhere: 16 parts x 72
  EXPECT_EQ(j["calibration"]["first_window"], 0);
  EXPECT_EQ(j["held_out"]["first_window"], 2);  // right after the calibration windows: never the same data
  EXPECT_EQ(j["held_out"]["probe_families"], nlohmann::json::array({"needle", "drift"}));
  ASSERT_FALSE(j["verified"].empty());
  for (const nlohmann::json& v : j["verified"]) {
    ASSERT_TRUE(v["held_out"].is_object()) << v.dump();
    EXPECT_GT(v["held_out"]["tokens"].get<int>(), 0);
    for (const char* key : {"kld_mean", "kld_p99", "top1_agree", "ppl_ratio"}) {
      EXPECT_TRUE(v["held_out"]["worst_bucket"][key].is_number()) << key;
    }
    EXPECT_EQ(v["within_budget"].get<bool>(), v["bytes_per_token"].get<int>() <= 1800);
    // PASS has no first failure; INCONCLUSIVE passes under balanced (inconclusive = "warn") with one.
    EXPECT_EQ(v["verdict"] == "PASS", v["first_failure"].is_null()) << v.dump();
    EXPECT_EQ(v["pass"].get<bool>(), v["verdict"] != "FAIL") << v.dump();
  }
  const bool found = !j["nothing_under_budget"].get<bool>();
  EXPECT_EQ(r.exit_code, found ? 0 : 1);
  if (found) {
    EXPECT_LE(j["recommended"]["bytes_per_token"].get<int>(), 1800);
    EXPECT_FALSE(j["recommended"]["deploy"]["engines"].empty());
    EXPECT_NE(r.out.find("recommended: " + j["recommended"]["spec"].get<std::string>()), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.out.find("nothing under the budget passes"), std::string::npos) << r.out;
  }
  // Every engine that cannot store the choice has its approximations verified (round 3), so each
  // engine's settings come with a verdict.
  const nlohmann::json& chosen = found ? j["recommended"] : j["cheapest_passing"];
  ASSERT_TRUE(chosen.is_object()) << j.dump();
  auto verified = [&](const std::string& spec) {
    for (const nlohmann::json& v : j["verified"]) {
      if (v["spec"] == spec) return true;
    }
    return spec == "k=f32,v=f32";
  };
  int approximations = 0;
  for (const nlohmann::json& e : chosen["deploy"]["engines"]) {
    if (e["exact"].get<bool>()) continue;
    for (const nlohmann::json& a : e["approximations"]) {
      ++approximations;
      EXPECT_TRUE(verified(a.get<std::string>())) << e["engine"] << ": " << a;
    }
  }
  EXPECT_GT(approximations, 0);  // vLLM, SGLang, TensorRT-LLM and transformers store no q4_0
  // Each engine's verified choice: the spec itself when exact, else the first approximation that
  // passed, with the approximations before it failed; its settings are that spec's own.
  auto verdict = [&](const std::string& spec) -> std::optional<bool> {
    for (const nlohmann::json& v : j["verified"]) {
      if (v["spec"] == spec) return v["pass"].get<bool>();
    }
    return std::nullopt;
  };
  for (const nlohmann::json& e : chosen["deploy"]["engines"]) {
    const nlohmann::json& c = e["verified_choice"];
    ASSERT_TRUE(c.is_object()) << e.dump();
    if (e["exact"].get<bool>()) {
      EXPECT_EQ(c["spec"], chosen["spec"]);
      EXPECT_EQ(c["flags"], e["flags"]);
      continue;
    }
    std::vector<std::string> failed;
    std::optional<std::string> first_pass;
    for (const nlohmann::json& a : e["approximations"]) {
      const std::optional<bool> pass = verdict(a.get<std::string>());
      if (!pass) continue;
      if (*pass) {
        first_pass = a.get<std::string>();
        break;
      }
      failed.push_back(a.get<std::string>());
    }
    EXPECT_EQ(c["failed"], nlohmann::json(failed)) << e["engine"];
    if (first_pass) {
      EXPECT_EQ(c["spec"], *first_pass) << e["engine"];
      EXPECT_TRUE(c["command_example"].is_string() && !c["command_example"].get<std::string>().empty());
      if (*first_pass == e["settings_for"]) {
        EXPECT_EQ(c["flags"], e["flags"]) << e["engine"];
      }
    } else {
      EXPECT_TRUE(c["spec"].is_null()) << e["engine"];
    }
  }
  for (const nlohmann::json& v : j["verified"]) {
    if (v["round"] == 3) {
      EXPECT_TRUE(v["shapes"].empty()) << v.dump();
    }
  }
  EXPECT_NE(r.out.find("(verified)"), std::string::npos) << r.out;

  // Another budget: the sensitivity stage resumes (its fingerprint holds no budget).
  const auto again = RunCli(kArgs + "--calib-windows 2 --policy balanced --budget 2000 --out " + out.string(), 600);
  ASSERT_TRUE(again.exit_code == 0 || again.exit_code == 1) << again.err;
  const nlohmann::json sens = Results(out / "sensitivity" / "proxy");
  EXPECT_EQ(sens["run"]["windows_resumed"], 2) << sens["run"].dump();
  fs::remove_all(out);
}

TEST(RecommendCliTest, BadInputIsOneLineAndExitTwo) {
  const fs::path out = testing::MakeTempDir("rec-bad");
  const std::string o = " --out " + out.string();
  for (const auto& [args, what] : std::vector<std::pair<std::string, std::string>>{
           {"--budget 500", "below the smallest configuration"},
           {"--budget 1800 --formats q9_0", "unknown format 'q9_0'"},
           {"--budget 1800 --baseline k=q9_0,v=f16", "q9_0"},
           {"--budget 1800 --baseline k=f16,v=f16,bogus=1", "bogus"},
           {"--budget 1.5GB", "GiB"},
           {"--budget 1800 --policy strcit", "strcit"},
           {"--budget 1800 --calib-windows 100000", "too few"},
       }) {
    const auto r = RunCli(kArgs + args + o);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kvaudit
