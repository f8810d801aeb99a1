// End-to-end: every kind of bad input reaches the user as one line on stderr and exit code 2,
// never a crash or a hang. Parser-level detail is tested in io_*_test.cc; here we check the CLI.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::Fixture;
using testing::MakeTempDir;

using RunResult = testing::CliResult;
using testing::RunCli;

std::string Slurp(const fs::path& p) { return testing::ReadFile(p.string()); }

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// A safetensors file: u64 little-endian header length, header, data.
std::string Safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// A model directory with the llama golden's config and the given model.safetensors bytes.
fs::path ModelDir(const std::string& safetensors_bytes, const std::string& config_edit_from = "",
                  const std::string& config_edit_to = "") {
  const fs::path dir = MakeTempDir("badmodel");
  std::string config = Slurp(Fixture("golden/llama/config.json"));
  if (!config_edit_from.empty()) {
    const size_t at = config.find(config_edit_from);
    EXPECT_NE(at, std::string::npos);
    config.replace(at, config_edit_from.size(), config_edit_to);
  }
  WriteFile(dir / "config.json", config);
  WriteFile(dir / "model.safetensors", safetensors_bytes);
  return dir;
}

// Exit 2, nothing on stdout, exactly one line on stderr that contains `needle`.
void ExpectCleanError(const RunResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "message lacks '" << needle << "': " << r.err;
}

TEST(CliErrorsTest, GgufWrongMagic) {
  const fs::path dir = MakeTempDir("gguf");
  WriteFile(dir / "m.gguf", "GGUX\x03\0\0\0" + std::string(32, '\0'));
  ExpectCleanError(RunCli("info --model " + (dir / "m.gguf").string()), "m.gguf");
}

TEST(CliErrorsTest, SafetensorsHeaderLengthBeyondFile) {
  std::string bytes = Safetensors("{}", "");
  bytes[5] = 0x7f;  // header length ~2^47
  ExpectCleanError(RunCli("info --model " + ModelDir(bytes).string()), "model.safetensors");
}

TEST(CliErrorsTest, SafetensorsHeaderNotJson) {
  ExpectCleanError(RunCli("info --model " + ModelDir(Safetensors("{not json", "")).string()), "model.safetensors");
}

TEST(CliErrorsTest, SafetensorsOffsetsBeyondFile) {
  const std::string h = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  ExpectCleanError(RunCli("info --model " + ModelDir(Safetensors(h, std::string(8, '\0'))).string()), "a");
}

TEST(CliErrorsTest, SafetensorsOverlappingTensors) {
  const std::string h =
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  ExpectCleanError(RunCli("info --model " + ModelDir(Safetensors(h, std::string(24, '\0'))).string()), "overlap");
}

TEST(CliErrorsTest, SafetensorsByteCountMismatch) {
  const std::string h = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,8]}})";
  ExpectCleanError(RunCli("info --model " + ModelDir(Safetensors(h, std::string(8, '\0'))).string()), "a");
}

TEST(CliErrorsTest, MissingRequiredTensor) {
  const std::string h = R"({"model.norm.weight":{"dtype":"F32","shape":[64],"data_offsets":[0,256]}})";
  ExpectCleanError(RunCli("info --model " + ModelDir(Safetensors(h, std::string(256, '\0'))).string()),
                   "model.embed_tokens.weight");
}

TEST(CliErrorsTest, UnknownArchitecture) {
  const fs::path dir = ModelDir(Safetensors("{}", ""), "\"model_type\": \"llama\"", "\"model_type\": \"gpt_neox\"");
  std::string config = Slurp(dir / "config.json");
  const size_t at = config.find("LlamaForCausalLM");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 16, "GPTNeoXForCausalLM");
  WriteFile(dir / "config.json", config);
  ExpectCleanError(RunCli("info --model " + dir.string()), "gpt_neox");
}

TEST(CliErrorsTest, ShardNamedInIndexButAbsent) {
  const fs::path dir = ModelDir("");
  fs::remove(dir / "model.safetensors");
  WriteFile(dir / "model.safetensors.index.json",
            R"({"weight_map":{"model.embed_tokens.weight":"model-00001-of-00002.safetensors"}})");
  ExpectCleanError(RunCli("info --model " + dir.string()), "model-00001-of-00002.safetensors");
}

TEST(CliErrorsTest, TokenIdOutOfRange) {
  const fs::path dir = MakeTempDir("ids");
  WriteFile(dir / "ids.txt", "1 2 3 256 4");
  ExpectCleanError(
      RunCli("score --model " + Fixture("golden/llama").string() + " --ids-file " + (dir / "ids.txt").string()), "256");
}

TEST(CliErrorsTest, EmptyTextFile) {
  const fs::path dir = MakeTempDir("empty");
  WriteFile(dir / "empty.txt", "");
  ExpectCleanError(
      RunCli("score --model " + testing::BundledModelDir().string() + " --data " + (dir / "empty.txt").string()),
      "empty.txt");
}

TEST(CliErrorsTest, MissingModelPath) {
  ExpectCleanError(RunCli("info --model /nonexistent/model"), "/nonexistent/model");
}

TEST(CliErrorsTest, BadFlagNamesTheSubcommand) {
  const RunResult r = RunCli("score --no-such-flag");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("kvaudit score --help"), std::string::npos) << r.err;
}

// A near miss gets the flag or format it was probably meant to be; a far one gets no guess.
TEST(CliErrorsTest, ATypoInAFlagOrAFormatGetsDidYouMean) {
  const std::string model = "--model " + testing::BundledModelDir().string();
  ExpectCleanError(RunCli("eval " + model + " --thread 2"),
                   "--thread; hint: did you mean --threads? run 'kvaudit eval --help'");
  ExpectCleanError(RunCli("audit " + model + " --windwos=3"),
                   "hint: did you mean --windows? run 'kvaudit audit --help'");
  const RunResult far = RunCli("score --no-such-flag");
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  ExpectCleanError(RunCli("info " + model + " --kv k=q4,v=q4_0"), "unknown format 'q4'");
  ExpectCleanError(RunCli("info " + model + " --kv k=q4,v=q4_0"), "hint: did you mean q4_0? formats: ");
  const RunResult none = RunCli("info " + model + " --kv k=zzzzzz");
  EXPECT_EQ(none.err.find("did you mean"), std::string::npos) << none.err;
}

TEST(CliErrorsTest, HelpExitsZeroForEverySubcommand) {
  for (const char* sub : {"info", "tokenize", "generate", "score"}) {
    const RunResult r = RunCli(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("--model"), std::string::npos) << sub;
  }
}

}  // namespace
}  // namespace kvaudit
