// Cache memory follows use, end to end (docs/architecture.md "Cache memory"). A model whose config
// claims a context of 2^31 − 1 tokens still runs a short generate and `info --kv` (nothing is
// allocated for the whole context), a generate that could reach that context is one line and exit 2
// (no abort, no OOM kill), and a short generate on the bundled model holds one chunk of cache
// (2 MiB f32), not its 4096-token context (32 MiB).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::RunCli;

constexpr char kHugeContext[] = "2147483647";  // the largest max_position_embeddings config.json accepts

// `model` with config.json's max_position_embeddings set to kHugeContext; every other file linked
// (the weights are not copied).
fs::path WithHugeContext(const fs::path& model) {
  const fs::path dir = testing::MakeTempDir("huge-ctx");
  for (const auto& e : fs::directory_iterator(model)) {
    if (e.path().filename() != "config.json") fs::create_symlink(fs::absolute(e.path()), dir / e.path().filename());
  }
  std::string config = testing::ReadFile((model / "config.json").string());
  const std::string key = "\"max_position_embeddings\":";
  const size_t at = config.find(key);
  EXPECT_NE(at, std::string::npos);
  const size_t from = config.find_first_of("0123456789", at), to = config.find_first_not_of("0123456789", from);
  config.replace(from, to - from, kHugeContext);
  std::ofstream(dir / "config.json") << config;
  return dir;
}

// Exit 2, nothing on stdout, one line on stderr.
void ExpectOneLineError(const testing::CliResult& r) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
}

double HeldMib(const std::string& err) {
  const std::string key = "KV cache ";
  const size_t at = err.rfind(key);
  return at == std::string::npos ? -1.0 : std::stod(err.substr(at + key.size()));
}

TEST(CliCacheMemoryTest, GenerateThatCouldFillAHugeContextIsOneLineExit2) {
  const fs::path model = WithHugeContext(testing::BundledModelDir());
  for (const std::string kv : {"k=f32,v=f32", "k=q4_0,v=q4_0"}) {
    // Prompt + 2e9 tokens: 14.9 TiB of f32 cache (2.1 TiB as q4_0) — the run's need, checked before
    // the prompt is echoed.
    const auto r = RunCli("generate --model " + model.string() + " --kv " + kv +
                          " --prompt 'def f(x):' --max-tokens 2000000000 --ignore-eos --threads 1");
    ExpectOneLineError(r);
    EXPECT_EQ(r.err.rfind("kvaudit: error: KV cache for 2000000005 tokens needs ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(kv + ": 8 layers"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("TiB"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("hint: "), std::string::npos) << r.err;
  }
}

TEST(CliCacheMemoryTest, ShortRunsOnAHugeContextModelAllocateForWhatTheyUse) {
  const fs::path model = WithHugeContext(testing::BundledModelDir());
  const auto gen = RunCli("generate --model " + model.string() + " --prompt 'def f(x):' --max-tokens 8 --threads 1");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_DOUBLE_EQ(HeldMib(gen.err), 2.0) << gen.err;
  const auto info = RunCli("info --model " + model.string() + " --kv k=q4_0,v=q4_0");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("kv cache k=q4_0,v=q4_0: 1152.0 bytes/token"), std::string::npos) << info.out;
  // A tiny golden model (no tokenizer): info alone, 1.5 TiB of f32 cache at its claimed context.
  const auto golden = RunCli("info --model " + WithHugeContext(testing::Fixture("golden/llama")).string());
  ASSERT_EQ(golden.exit_code, 0) << golden.err;
  EXPECT_NE(golden.out.find("kv cache k=f32,v=f32: 768.0 bytes/token"), std::string::npos) << golden.out;
}

TEST(CliCacheMemoryTest, ShortGenerateHoldsOneChunkOfCache) {
  // Bundled model, context 4096: f32 8 KiB/token, so 2 MiB for one chunk of 256 positions (32 MiB
  // for the whole context); q4_0 1152 B/token, 0.28 MiB.
  const std::string model = " --model " + testing::BundledModelDir().string();
  const auto f32 = RunCli("generate" + model + " --prompt 'def fibonacci(n):' --max-tokens 16 --temp 0 --threads 2");
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_DOUBLE_EQ(HeldMib(f32.err), 2.0) << f32.err;
  const auto q4 =
      RunCli("generate" + model + " --prompt 'def fibonacci(n):' --max-tokens 16 --temp 0 --kv k=q4_0,v=q4_0");
  ASSERT_EQ(q4.exit_code, 0) << q4.err;
  EXPECT_DOUBLE_EQ(HeldMib(q4.err), 0.28) << q4.err;
}

}  // namespace
}  // namespace kvaudit
