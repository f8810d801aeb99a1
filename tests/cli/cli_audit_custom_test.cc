// The team's own probes in an audit, end to end on the bundled model: a custom probe that the
// baseline passes and only one configuration fails is named in the verdict block, results.json and
// gate.xml under every policy, and fails that configuration under strict (docs/decision.md "The
// team's probes"). The probe is found, not hard-coded: a first probe run gives each cache's greedy
// continuation of a few code prompts, and the first prompt that q8_0 continues as the baseline does
// and q4_0 does not becomes the probe, its "expected" the baseline's continuation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kModel = "--model " + testing::BundledModelDir().string() + " --threads 2 ";

std::string LeftTrimmed(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// {prompt, the baseline's continuation} of the first prompt q8_0 keeps and q4_0 loses.
std::optional<std::pair<std::string, std::string>> ProbeOnlyQ4Loses(const fs::path& dir) {
  const std::vector<std::string> prompts = {"def parse_config(path):\n    with open(path) as f:\n",
                                            "import json\n\ndef load(path):\n",
                                            "class Stack:\n    def __init__(self):\n",
                                            "for i in range(10):\n    if i % 2 == 0:\n",
                                            "def fibonacci(n):\n    if n < 2:\n",
                                            "#include <stdio.h>\n\nint main(void) {\n",
                                            "SELECT name, COUNT(*) FROM users\n",
                                            "const express = require('express');\nconst app = express();\n"};
  std::ofstream file(dir / "candidates.jsonl");
  for (size_t i = 0; i < prompts.size(); ++i) {
    file << json({{"id", "c" + std::to_string(i)},
                  {"prompt", prompts[i]},
                  {"contains", "ZZZ_NEVER_ZZZ"},
                  {"max_tokens", 24}})
                .dump()
         << "\n";
  }
  file.close();
  const auto r = testing::RunCli("probe " + kModel + "--kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --custom " +
                                     (dir / "candidates.jsonl").string() + " --out " + (dir / "candidates").string(),
                                 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream journal(testing::ReadFile((dir / "candidates" / "progress.jsonl").string()));
  std::map<std::string, json> runs;  // id -> runs [baseline, q8_0, q4_0]
  for (std::string line; std::getline(journal, line);) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "check") runs[j["id"].get<std::string>()] = j["runs"];
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto it = runs.find("custom/c" + std::to_string(i));
    if (it == runs.end()) continue;
    const std::string base = LeftTrimmed(it->second[0]["text"].get<std::string>());
    const std::string q8 = LeftTrimmed(it->second[1]["text"].get<std::string>());
    const std::string q4 = LeftTrimmed(it->second[2]["text"].get<std::string>());
    if (!base.empty() && q8 == base && q4.rfind(base, 0) != 0) return std::make_pair(prompts[i], base);
  }
  return std::nullopt;
}

TEST(AuditCustomProbeTest, AProbeLostOnlyUnderOneConfigurationIsNamedAndFailsItUnderStrict) {
  const fs::path dir = testing::MakeTempDir("audit-custom");
  const auto probe = ProbeOnlyQ4Loses(dir);
  ASSERT_TRUE(probe.has_value()) << "no candidate prompt that q8_0 keeps and q4_0 loses";
  std::ofstream(dir / "team.jsonl")
      << json({{"id", "keep-this"}, {"prompt", probe->first}, {"expected", probe->second}, {"max_tokens", 24}}).dump()
      << "\n";
  for (const std::string policy : {"strict", "balanced"}) {
    const fs::path out = dir / policy;
    const auto r =
        testing::RunCli("audit " + kModel + "--data " + (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
                            " --kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --target native --ctx 256 --windows 2 "
                            "--lengths 128 --attn-samples 0 --policy " +
                            policy + " --custom " + (dir / "team.jsonl").string() + " --out " + out.string(),
                        600);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << policy << "\n" << r.err;
    const json j = json::parse(testing::ReadFile((out / "results.json").string()), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << policy;
    ASSERT_EQ(j["configs"].size(), 2u);
    EXPECT_TRUE(j["configs"][0]["lost_custom_probes"].empty()) << j["configs"][0].dump();
    ASSERT_EQ(j["configs"][1]["lost_custom_probes"].size(), 1u) << j["configs"][1].dump();
    const std::string name = j["configs"][1]["lost_custom_probes"][0].get<std::string>();
    EXPECT_EQ(name.rfind("keep-this (", 0), 0u) << name;
    // The verdict block names it under every policy, and says what the policy does with it.
    const std::string line = "custom probes lost under k=q4_0,v=q4_0: " + name + " (" +
                             (policy == "strict" ? "each fails it" : "a warning") + " under policy " + policy + ")";
    EXPECT_NE(r.out.find(line), std::string::npos) << policy << "\n" << r.out;
    const std::string xml = testing::ReadFile((out / "gate.xml").string());
    const std::string testcase = "name=\"custom.per_probe probe keep-this\">\n      <" +
                                 std::string(policy == "strict" ? "failure" : "skipped") + " message=\"" +
                                 (policy == "strict" ? "" : "warning: ") + "custom probe keep-this (";
    EXPECT_NE(xml.find(testcase), std::string::npos) << policy << "\n" << xml;
    EXPECT_EQ(j["configs"][1]["pass"], false) << "q4_0 fails both presets on fidelity anyway";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
