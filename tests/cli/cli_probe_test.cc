// `kvaudit probe` end to end on the bundled model (short prompts to stay fast): stable result keys,
// an identical configuration attributes nothing to the cache, resume after a crash gives identical
// results, a changed run is refused (seeds, a custom probe's check, the calibration text), custom
// probes alone run alone, --variant must fit --family, and malformed custom probes stop everything
// with exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

const std::string kModel = "--model " + testing::BundledModelDir().string() + " --data " +
                           (testing::RepoDir() / "data" / "eval-docs.jsonl").string() + " --threads 2 ";
const std::string kSmall =
    "--lengths 256 --depths 0,100 --variant code,identifiers,prefix --samples 2 --variance-tokens 8 "
    "--drift-tokens 8 ";

nlohmann::json Results(const fs::path& dir) {
  return nlohmann::json::parse(ReadFile((dir / "results.json").string()), nullptr, false);
}

void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// One line on stderr naming what changed, exit 2, the hint to start over.
void ExpectRefused(const testing::CliResult& r, const std::string& changed) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_NE(r.err.find(changed), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" changed)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--restart"), std::string::npos) << r.err;
}

TEST(ProbeCliTest, IdenticalConfigurationAttributesNothingToTheCache) {
  const fs::path out = testing::MakeTempDir("probe-same");
  const auto r = RunCli("probe " + kModel + kSmall + "--kv k=f32,v=f32 --kv k=q4_0,v=q4_0 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);  // no progress bar into a pipe
  const nlohmann::json j = Results(out);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["kind"], "probe");
  EXPECT_EQ(j["model_hash"].get<std::string>().size(), 16u);
  // needle/code at 2 depths, exact/identifiers at 2 depths (pooled: depth is a key for needles
  // only), constraint/prefix: (2 + 1 + 1) rows per configuration.
  ASSERT_EQ(j["probes"].size(), 8u);
  int f32_rows = 0;
  for (const auto& row : j["probes"]) {
    for (const char* key :
         {"family", "variant", "config", "length", "depth", "n", "baseline_pass", "config_pass", "both_pass",
          "cache_induced", "recovered", "both_fail", "mcnemar_p", "mcnemar_p_holm", "significant"}) {
      ASSERT_TRUE(row.contains(key)) << key;
    }
    EXPECT_GE(row["mcnemar_p_holm"].get<double>(), row["mcnemar_p"].get<double>());
    EXPECT_EQ(row["length"], 256);
    EXPECT_EQ(row["depth"].is_null(), row["family"] != "needle");
    EXPECT_EQ(row["n"].get<int>(), row["both_pass"].get<int>() + row["cache_induced"].get<int>() +
                                       row["recovered"].get<int>() + row["both_fail"].get<int>());
    if (row["config"] == "k=f32,v=f32") {
      ++f32_rows;
      EXPECT_EQ(row["cache_induced"], 0);
      EXPECT_EQ(row["recovered"], 0);
      EXPECT_EQ(row["mcnemar_p"], 1.0);
      EXPECT_EQ(row["baseline_pass"], row["config_pass"]);
    }
  }
  EXPECT_EQ(f32_rows, 4);
  // One pooled test per configuration × family (needle, exact, constraint).
  ASSERT_EQ(j["pooled"].size(), 6u);
  for (const auto& p : j["pooled"]) {
    for (const char* key : {"config", "family", "cells", "n", "cache_induced", "recovered", "mcnemar_p",
                            "mcnemar_p_holm", "significant"}) {
      ASSERT_TRUE(p.contains(key)) << key;
    }
    if (p["config"] == "k=f32,v=f32") {
      EXPECT_EQ(p["mcnemar_p_holm"], 1.0);
    }
  }
  // Variance and drift: the identical cache reproduces every sample and the greedy path exactly
  // (batch-invariant engine: KL along the path is exactly 0).
  ASSERT_EQ(j["variance"].size(), 2u);
  EXPECT_EQ(j["variance"][0]["config"], "k=f32,v=f32");
  EXPECT_EQ(j["variance"][0]["identical_pairs"], j["variance"][0]["pairs"]);
  ASSERT_EQ(j["drift"].size(), 2u);
  EXPECT_EQ(j["drift"][0]["identical"], 1);
  EXPECT_EQ(j["drift"][0]["kl_mean"], 0.0);
  EXPECT_GT(j["drift"][1]["kl_mean"].get<double>(), 0.0);  // q4_0 moves the distribution
  EXPECT_NE(r.out.find("needle/code under k=q4_0,v=q4_0"), std::string::npos);
  fs::remove_all(out);
}

TEST(ProbeCliTest, ResumeAfterCrashGivesIdenticalResultsAndMismatchIsRefused) {
  const fs::path a = testing::MakeTempDir("probe-full"), b = testing::MakeTempDir("probe-crash");
  const std::string args = "probe " + kModel + kSmall + "--kv k=q4_0,v=q4_0 ";
  const auto full = RunCli(args + "--out " + a.string());
  ASSERT_EQ(full.exit_code, 0) << full.err;
  std::ifstream in(a / "progress.jsonl");
  std::string header, l1, l2;
  std::getline(in, header), std::getline(in, l1), std::getline(in, l2);
  ASSERT_FALSE(l2.empty());
  { std::ofstream(b / "progress.jsonl") << header << '\n' << l1 << '\n' << l2.substr(0, l2.size() / 2); }
  const auto resumed = RunCli(args + "--out " + b.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  nlohmann::json ja = Results(a), jb = Results(b);
  EXPECT_EQ(jb["run"]["instances_resumed"], 1);
  ja.erase("run"), jb.erase("run");
  EXPECT_EQ(ja, jb);
  const auto changed = RunCli("probe " + kModel + kSmall + "--kv k=q4_0,v=q4_0 --probe-seed 2 --out " + b.string());
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_NE(changed.err.find("probe_seed"), std::string::npos) << changed.err;
  EXPECT_NE(changed.err.find("hint"), std::string::npos);
  fs::remove_all(a), fs::remove_all(b);
}

TEST(ProbeCliTest, CustomProbesRunAndMalformedFilesStopBeforeAnything) {
  const fs::path out = testing::MakeTempDir("probe-custom");
  const fs::path good = out / "good.jsonl", bad = out / "bad.jsonl";
  {
    std::ofstream(good) << R"({"id": "fib", "prompt": "def fibonacci(n):\n", "contains": "return", "max_tokens": 48})"
                        << "\n\n"
                        << R"({"id": "imp", "prompt": "import os\nimport ", "regex": "^[a-z_]+", "max_tokens": 4})"
                        << "\n";
    std::ofstream(bad) << R"({"id": "a", "prompt": "x", "expected": "y"})"
                       << "\n"
                       << R"({"id": "b", "prompt": "x", "regex": "("})"
                       << "\n"
                       << "not json\n";
  }
  const fs::path run_dir = out / "run";
  const auto r = RunCli("probe " + kModel + "--kv k=q8_0,v=q8_0 --family custom --custom " + good.string() + " --out " +
                        run_dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = Results(run_dir);
  int n = 0;  // rows per length cell: the prompt's own token length
  for (const auto& row : j["probes"]) {
    EXPECT_EQ(row["family"], "custom");
    EXPECT_EQ(row["config"], "k=q8_0,v=q8_0");
    n += row["n"].get<int>();
  }
  EXPECT_EQ(n, 2);
  // Each custom probe by its id, with its real token length and both verdicts.
  ASSERT_EQ(j["custom_probes"].size(), 2u) << j["custom_probes"].dump();
  EXPECT_EQ(j["custom_probes"][0]["id"], "fib");
  EXPECT_EQ(j["custom_probes"][1]["id"], "imp");
  for (const auto& probe : j["custom_probes"]) {
    EXPECT_EQ(probe["config"], "k=q8_0,v=q8_0");
    EXPECT_TRUE(probe["baseline_pass"].is_boolean() && probe["pass"].is_boolean()) << probe.dump();
    const int tokens = probe["tokens"].get<int>();
    EXPECT_GT(tokens, 2);
    EXPECT_LT(tokens, 16);  // a short prompt, not rounded up
    bool cell = false;      // its length cell in probes[] is that length
    for (const auto& row : j["probes"]) cell = cell || row["length"] == tokens;
    EXPECT_TRUE(cell) << tokens << " " << j["probes"].dump();
  }
  const fs::path bad_dir = out / "bad-run";
  const auto e =
      RunCli("probe " + kModel + "--kv k=q8_0,v=q8_0 --custom " + bad.string() + " --out " + bad_dir.string());
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("bad.jsonl:2:"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("bad.jsonl:3:"), std::string::npos) << e.err;
  EXPECT_FALSE(fs::exists(bad_dir));  // nothing ran, nothing was written
  fs::remove_all(out);
}

// A verdict restored from the journal must come from the same check: an edited "expected" (or any
// check field, or max_tokens) is refused by name, never scored with the old verdict.
TEST(ProbeCliTest, EditedCustomProbeIsRefusedOnResume) {
  const fs::path dir = testing::MakeTempDir("probe-custom-edit");
  const fs::path probes = dir / "probes.jsonl", out = dir / "run";
  const std::string fib = R"({"id": "fib", "prompt": "def fibonacci(n):\n", )";
  const std::string imp = R"({"id": "imp", "prompt": "import os\nimport ", "regex": "^[a-z_]+", "max_tokens": 4})";
  Write(probes, fib + R"("expected": "return", "max_tokens": 8})" + "\n" + imp + "\n");
  const std::string args =
      "probe " + kModel + "--kv k=q8_0,v=q8_0 --custom " + probes.string() + " --out " + out.string();
  const auto first = RunCli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string journal = ReadFile((out / "progress.jsonl").string());
  Write(probes, fib + R"("expected": "    if", "max_tokens": 8})" + "\n" + imp + "\n");
  ExpectRefused(RunCli(args), "custom.fib.expected");
  Write(probes, fib + R"("expected": "return", "max_tokens": 9})" + "\n" + imp + "\n");
  ExpectRefused(RunCli(args), "custom.fib.max_tokens");
  Write(probes, fib + R"("contains": "return", "max_tokens": 8})" + "\n" + imp + "\n");
  ExpectRefused(RunCli(args), "custom.fib.contains");
  EXPECT_EQ(ReadFile((out / "progress.jsonl").string()), journal);  // refused runs leave it as it was
  Write(probes, fib + R"("expected": "return", "max_tokens": 8})" + "\n" + imp + "\n");
  const auto same = RunCli(args);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(Results(out)["run"]["instances_resumed"], 2);
  fs::remove_all(dir);
}

TEST(ProbeCliTest, ChangedCalibrationTextIsRefusedOnResume) {
  const fs::path dir = testing::MakeTempDir("probe-calib-edit");
  const fs::path calib = dir / "calib.txt", probes = dir / "probes.jsonl", out = dir / "run";
  Write(calib,
        "def add(a, b):\n    return a + b\n\nclass Stack:\n    def push(self, x):\n        self.items.append(x)\n");
  Write(probes, R"({"id": "imp", "prompt": "import os\nimport ", "regex": "^[a-z_]+", "max_tokens": 4})"
                "\n");
  const std::string args = "probe " + kModel + "--kv k=fp8_e4m3,v=fp8_e4m3,scale=calib --kv-calib " + calib.string() +
                           " --custom " + probes.string() + " --out " + out.string();
  const auto first = RunCli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  Write(calib, "import sys\nprint(sys.argv)\n");
  ExpectRefused(RunCli(args), "calibration");
  fs::remove_all(dir);
}

// --custom without --family runs the custom probes only (not every default family besides).
TEST(ProbeCliTest, CustomFileAloneRunsOnlyTheCustomProbes) {
  const fs::path dir = testing::MakeTempDir("probe-custom-only");
  Write(dir / "p.jsonl", R"({"id": "imp", "prompt": "import os\nimport ", "regex": "^[a-z_]+", "max_tokens": 4})"
                         "\n");
  const auto r = RunCli("probe " + kModel + "--kv k=q8_0,v=q8_0 --custom " + (dir / "p.jsonl").string() +
                        " --json --out " + (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);  // --json: the results document on stdout
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j, Results(dir / "run"));
  EXPECT_EQ(j["run"]["instances"], 1);
  ASSERT_EQ(j["probes"].size(), 1u);
  EXPECT_EQ(j["probes"][0]["family"], "custom");
  EXPECT_TRUE(j["variance"].empty());
  EXPECT_TRUE(j["drift"].empty());
  EXPECT_EQ(j["probe_seed"], 1);
  EXPECT_EQ(j["sampling_seed"], 1);
  fs::remove_all(dir);
}

// Custom probes bring their own prompts: a custom-only run needs no haystack, so it neither asks for
// --data nor falls back to the bundled documents (run from a directory that has none).
TEST(ProbeCliTest, CustomOnlyRunNeedsNoHaystack) {
  const fs::path dir = testing::MakeTempDir("probe-custom-nodata");
  Write(dir / "p.jsonl", R"({"id": "imp", "prompt": "import os\nimport ", "regex": "^[a-z_]+", "max_tokens": 4})"
                         "\n");
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  const auto r = RunCli("probe --model " + testing::BundledModelDir().string() +
                        " --threads 2 --kv k=q8_0,v=q8_0 --custom p.jsonl --out run");
  const auto needs =
      RunCli("probe --model " + testing::BundledModelDir().string() + " --kv k=q8_0,v=q8_0 --family needle --out run2");
  fs::current_path(before);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--data not given"), std::string::npos) << r.err;
  const nlohmann::json j = Results(dir / "run");
  EXPECT_TRUE(j["data"].is_null()) << j["data"];
  EXPECT_EQ(j["run"]["instances"], 1);
  // A generated family still needs its haystack: without data/ here that is one line, exit 2.
  EXPECT_EQ(needs.exit_code, 2) << needs.err;
  EXPECT_NE(needs.err.find("--data not given"), std::string::npos) << needs.err;
  fs::remove_all(dir);
}

// A --variant that belongs to no selected family is an error naming the value and its family;
// so is a family named in --family that gets none of the variants.
TEST(ProbeCliTest, VariantOutsideTheSelectedFamiliesIsAnError) {
  const std::string base =
      "probe " + kModel + "--kv k=q4_0,v=q4_0 --lengths 256 --out " + testing::MakeTempDir("probe-var").string();
  const auto other = RunCli(base + " --family needle --variant code,identifiers");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("--variant identifiers belongs to exact"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("hint"), std::string::npos) << other.err;
  const auto none = RunCli(base + " --family needle,exact --variant code");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--family exact"), std::string::npos) << none.err;
  const auto drift_only = RunCli(base + " --family drift --variant prefix");
  EXPECT_EQ(drift_only.exit_code, 2);
  EXPECT_NE(drift_only.err.find("belongs to constraint"), std::string::npos) << drift_only.err;
}

TEST(ProbeCliTest, ListAndBadFlags) {
  const auto list = RunCli("probe --list");
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("needle"), std::string::npos);
  EXPECT_NE(list.out.find("drift"), std::string::npos);
  for (const std::string& flags :
       {std::string("--kv k=q4_0,v=q4_0 --family needles"), std::string("--kv k=q4_0,v=q4_0 --lengths 100000"),
        std::string("--kv k=q4_0,v=q4_0 --lengths 512x"), std::string("--family needle"),
        std::string("--kv k=q4_0,v=q4_0 --depths 101 --family needle"), std::string("--kv k=q9_0,v=q4_0"),
        std::string("--kv k=q4_0,v=q4_0 --chat-template jinja2"), std::string("--kv k=q4_0,v=q4_0 --variant cod"),
        std::string("--kv k=q4_0,v=q4_0 --seed x"), std::string("--kv k=q4_0,v=q4_0 --variant all,code")}) {
    const auto r = RunCli("probe " + kModel + flags + " --out " + testing::MakeTempDir("probe-bad").string());
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_NE(r.err.find("hint"), std::string::npos) << flags << ": " << r.err;
  }
}

}  // namespace
}  // namespace kvaudit
