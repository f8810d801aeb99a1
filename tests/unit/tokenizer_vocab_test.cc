// llama.cpp's tokenizer test vectors (tests/test-tokenizer-0): for each vocabulary-only GGUF, the
// .inp file holds test strings, each followed by "\n__ggml_vocab_test__\n", and the .out file one
// line of expected ids per string (Hugging Face tokenizers, add_special_tokens=False). Every string
// must give exactly those ids.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

using testing::Fixture;

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits like test-tokenizer-0.cpp: text up to each separator; nothing follows the last one.
std::vector<std::string> ReadInputs(const std::string& all) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t next = all.find(sep, pos);
    if (next == std::string::npos) next = all.size();
    out.push_back(all.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> ReadOutputs(const std::string& all) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(all);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> v;
    int64_t id;
    while (ids >> id) v.push_back(static_cast<int32_t>(id));
    out.push_back(std::move(v));
  }
  return out;
}

std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

class TokenizerVocabTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerVocabTest, MatchesReferenceIds) {
  const std::string name = "tokenizers/ggml-vocab-" + GetParam() + ".gguf";
  const auto gguf_path = Fixture(name);
  const auto inp_path = Fixture(name + ".inp");
  const auto out_path = Fixture(name + ".out");
  auto gguf = GgufFile::Open(gguf_path.string());
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  auto tok = Tokenizer::FromGguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.error().message;

  const auto inputs = ReadInputs(Slurp(inp_path));
  const auto expected = ReadOutputs(Slurp(out_path));
  ASSERT_GT(inputs.size(), 40u) << inp_path;
  ASSERT_EQ(inputs.size(), expected.size()) << inp_path << " vs " << out_path;

  int mismatches = 0;
  std::string report;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // add_special=false, parse_special=false as in test-tokenizer-0.
    const auto got = (*tok)->Encode(inputs[i], /*add_bos=*/false, /*parse_special=*/false);
    if (got != expected[i]) {
      ++mismatches;
      report += "\n  #" + std::to_string(i) + " '" + inputs[i].substr(0, 60) + "'\n    want:" + Join(expected[i]) +
                "\n    got: " + Join(got);
    }
  }
  EXPECT_EQ(mismatches, 0) << GetParam() << ": " << mismatches << " of " << inputs.size()
                           << " strings differ:" << report;
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, TokenizerVocabTest,
                         ::testing::Values("llama-spm", "llama-bpe", "qwen2", "phi-3", "gpt-2"), [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace kvaudit
