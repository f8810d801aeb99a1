// The flags every subcommand shares (src/cli/flags.h, docs/cli.md): the bundled defaults by their
// relative names only, one rule for --ctx, --json as one document, and the old flag names gone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::RunCli;

const std::string kModel = "--model " + testing::BundledModelDir().string() + " ";

// The defaults are resolved from the current directory: run the binary from `dir`.
CliResult RunCliIn(const fs::path& dir, const std::string& args) {
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  CliResult r = RunCli(args);
  fs::current_path(before);
  return r;
}

// Exit 2 and exactly one stderr line that contains every needle.
void ExpectOneLineError(const CliResult& r, std::initializer_list<const char*> needles) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_EQ(r.err.rfind("kvaudit: error: ", 0), 0u) << r.err;
  for (const char* n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "lacks '" << n << "': " << r.err;
}

TEST(CliFlagsTest, WithoutModelTheBundledModelIsUsedByItsRelativeNameAndSaidSo) {
  const CliResult r = RunCliIn(testing::RepoDir(), "info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "kvaudit: --model not given: using the bundled demo model models/kvq-code-16m\n");
  EXPECT_NE(r.out.find("model: models/kvq-code-16m\n"), std::string::npos) << r.out;  // never an absolute build path
}

TEST(CliFlagsTest, WithoutModelElsewhereIsAnErrorWithAHint) {
  const fs::path dir = testing::MakeTempDir("no-model");
  ExpectOneLineError(RunCliIn(dir, "info"), {"--model not given", "models/kvq-code-16m", "hint: pass --model"});
  ExpectOneLineError(RunCliIn(dir, "score " + kModel),
                     {"--data not given", "data/eval-docs.jsonl", "hint: pass --data"});
  fs::remove_all(dir);
}

TEST(CliFlagsTest, WithoutDataTheBundledDocumentsAreUsedAndSaidSo) {
  const fs::path out = testing::MakeTempDir("default-data");
  const CliResult r = RunCliIn(testing::RepoDir(), "eval " + kModel +
                                                       "--kv k=q8_0,v=q8_0 --ctx 64 --windows 1 --attn-samples 0 "
                                                       "--out " +
                                                       out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "kvaudit: --data not given: using the bundled eval documents data/eval-docs.jsonl\n");
  fs::remove_all(out);
}

// --ctx above the model's context (4096 for the bundled model) is refused in every subcommand that
// takes it, before anything runs.
void ExpectCtxRefused(const std::string& command) {
  ExpectOneLineError(RunCli(command + " --ctx 4097"),
                     {"--ctx 4097 exceeds the model's context length 4096", "hint: use --ctx 4096"});
}

TEST(CliFlagsTest, CtxAboveTheModelsContextIsRefusedByInfo) { ExpectCtxRefused("info " + kModel); }
TEST(CliFlagsTest, CtxAboveTheModelsContextIsRefusedByGenerate) {
  ExpectCtxRefused("generate " + kModel + "--prompt 'def f(x):' --max-tokens 4");
}
TEST(CliFlagsTest, CtxAboveTheModelsContextIsRefusedByScore) {
  ExpectCtxRefused("score " + kModel + "--data " + testing::Fixture("data/public-kld.txt").string());
}
TEST(CliFlagsTest, CtxAboveTheModelsContextIsRefusedByEval) {
  ExpectCtxRefused("eval " + kModel + "--kv k=q8_0,v=q8_0 --data " + testing::Fixture("data/public-kld.txt").string() +
                   " --out " + testing::MakeTempDir("eval-ctx").string());
}

// A --kv the command cannot use (an unknown format, a malformed cache configuration file) is refused before
// anything is printed: one line on stderr, nothing on stdout, in every command that takes --kv.
TEST(CliFlagsTest, BadKvIsOneLineAndNothingOnStdout) {
  const fs::path dir = testing::MakeTempDir("bad-kv");
  std::ofstream(dir / "bad.json") << R"({"k":"q3_x","v":"q4_0"})";
  const std::string data = " --data " + testing::Fixture("data/public-kld.txt").string();
  for (const std::string& kv : std::vector<std::string>{"k=q3_x,v=q4_0", "@" + (dir / "bad.json").string()}) {
    for (const std::string& cmd :
         std::vector<std::string>{"info " + kModel, "generate " + kModel + "--prompt 'def f(x):' --max-tokens 4",
                                  "score " + kModel + data, "eval " + kModel + data + " --out " + (dir / "e").string(),
                                  "probe " + kModel + data + " --out " + (dir / "p").string()}) {
      const CliResult r = RunCli(cmd + " --kv " + kv);
      ExpectOneLineError(r, {"unknown format 'q3_x'"});
      EXPECT_TRUE(r.out.empty()) << cmd << " --kv " << kv << " printed: " << r.out;
    }
  }
  fs::remove_all(dir);
}

// A bad --baseline is named as --baseline, not --kv, in its one-line error (the parser is told
// which flag the spec came from), before anything runs.
TEST(CliFlagsTest, BadBaselineNamesTheBaselineFlag) {
  const fs::path dir = testing::MakeTempDir("bad-baseline");
  const std::string data = " --data " + testing::Fixture("data/public-kld.txt").string();
  for (const std::string& cmd : std::vector<std::string>{"eval " + kModel + data + " --out " + (dir / "e").string(),
                                                         "probe " + kModel + data + " --out " + (dir / "p").string()}) {
    const CliResult r = RunCli(cmd + " --kv k=q8_0,v=q8_0 --baseline k=q3_x,v=f16");
    ExpectOneLineError(r, {"--baseline \"k=q3_x,v=f16\": unknown format 'q3_x'"});
    EXPECT_TRUE(r.out.empty()) << cmd << " printed: " << r.out;
  }
  fs::remove_all(dir);
}

// --ubatch is llama.cpp's -ub, 1-512 (Forward::kMaxChunk): 0 or 513 is refused in one line.
TEST(CliFlagsTest, UbatchOutsideOneTo512IsRefused) {
  for (const char* n : {"0", "513"}) {
    const CliResult r = RunCli("eval " + kModel + "--kv k=q8_0,v=q8_0 --ubatch " + n);
    ExpectOneLineError(r, {"--ubatch", n});
  }
}

TEST(CliFlagsTest, JsonIsOneDocumentForInfoAndFormats) {
  const CliResult info = RunCli("info " + kModel + "--kv k=q8_0,v=q4_0 --ctx 1024 --json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json i = nlohmann::json::parse(info.out, nullptr, false);
  ASSERT_FALSE(i.is_discarded()) << info.out;
  EXPECT_EQ(i["model"]["layers"], 8);
  EXPECT_EQ(i["model"]["context"], 4096);
  EXPECT_EQ(i["tokenizer"]["adds_bos"], true);
  ASSERT_EQ(i["kv"].size(), 2u);
  EXPECT_EQ(i["kv"][0]["spec"], "k=f32,v=f32");
  EXPECT_EQ(i["kv"][0]["bytes_per_token"], 8192);
  EXPECT_EQ(i["kv"][1]["spec"], "k=q8_0,v=q4_0");
  EXPECT_EQ(i["kv"][1]["ctx"], 1024);
  const CliResult formats = RunCli("formats --json");
  ASSERT_EQ(formats.exit_code, 0) << formats.err;
  const nlohmann::json f = nlohmann::json::parse(formats.out, nullptr, false);
  ASSERT_FALSE(f.is_discarded()) << formats.out;
  ASSERT_FALSE(f["formats"].empty());
  for (const auto& row : f["formats"]) {
    for (const char* key : {"format", "bits_per_element_hd64", "bits_per_element_hd128", "layout", "deployed_by"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
  }
  ASSERT_EQ(f["turboquant_presets"].size(), 4u);
  EXPECT_EQ(f["turboquant_presets"][1]["preset"], "turboquant_4bit_nc");
  EXPECT_EQ(f["turboquant_presets"][1]["k"], "turboquant_mse4");
  EXPECT_DOUBLE_EQ(f["turboquant_presets"][1]["bits_per_element_hd128"].get<double>(), 4.1875);  // vLLM: 134 B / 256
}

// One meaning per flag: score reads --data (as eval and probe do); --text-file is tokenize's raw
// bytes only; the seeds are named apart.
TEST(CliFlagsTest, OldFlagNamesAreGone) {
  const std::string text = testing::Fixture("data/public-kld.txt").string();
  for (const std::string& args :
       {"score " + kModel + "--text-file " + text, "eval " + kModel + "--kv k=q8_0,v=q8_0 --seed 2"}) {
    const CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("hint: run 'kvaudit "), std::string::npos) << args << ": " << r.err;
  }
  const CliResult tok = RunCli("tokenize " + kModel + "--text-file " + text);
  EXPECT_EQ(tok.exit_code, 0) << tok.err;
}

}  // namespace
}  // namespace kvaudit
