// Probes on a model whose vocabulary is single bytes (the llama.cpp phi3 golden: 256 tokens, no
// merges), where planted facts and distractors are long next to the filler and greedy output can
// stop inside a UTF-8 character: the prompt is placed exactly (the fact at its depth, the length
// exact) or refused in one line, and results and journals are written whatever bytes the model
// produced (invalid UTF-8 as U+FFFD).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

TEST(ProbeByteVocabTest, ShortPromptsArePlacedAndAnyOutputIsWritten) {
  const fs::path dir = testing::MakeTempDir("probe-bytes");
  const std::string model = testing::Fixture("golden/llamacpp/phi3/model.gguf").string();
  for (const int length : {220, 512}) {  // 220: a length whose needles once overran it
    const fs::path out = dir / std::to_string(length);
    const auto r = testing::RunCli(
        "probe --model " + model + " --data " + (testing::RepoDir() / "data" / "eval-docs.jsonl").string() +
        " --kv k=fp8_e4m3,v=fp8_e4m3 --family needle --lengths " + std::to_string(length) + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << length << "\n" << r.err;
    const nlohmann::json j = nlohmann::json::parse(testing::ReadFile((out / "results.json").string()), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << length;
    ASSERT_FALSE(j["probes"].empty()) << length;
    for (const nlohmann::json& p : j["probes"]) EXPECT_EQ(p["length"], length) << p.dump();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
