// tokenizer.json features on a tiny hand-made byte-level vocabulary, and malformed files: every
// failure is an Error with exit code 2 naming the file.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace kvaudit {
namespace {

using nlohmann::json;

// 256 byte tokens (ids 0..255), "ab" = 256, "abc" = 257, added "<s>" (special) = 258 and
// "<tag>" (not special) = 259.
json TinyTokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteLevelTable::Get().Encode(static_cast<uint8_t>(b))] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({json::array({"a", "b"}), "ab c"})}};
  j["added_tokens"] = json::array(
      {{{"id", 258}, {"content", "<s>"}, {"special", true}}, {{"id", 259}, {"content", "<tag>"}, {"special", false}}});
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}};
  return j;
}

std::unique_ptr<Tokenizer> Load(const json& j, const std::string& config = "") {
  auto tok = Tokenizer::FromHfJsonText(j.dump(), config, "tiny.json");
  EXPECT_TRUE(tok.ok()) << tok.error().message;
  return tok.ok() ? std::move(tok).value() : nullptr;
}

int32_t Byte(char c) { return static_cast<uint8_t>(c); }

TEST(TokenizerJsonTest, MergesAndRegexSplit) {
  auto tok = Load(TinyTokenizer());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("abc abx", false), (std::vector<int32_t>{257, Byte(' '), 256, Byte('x')}));
  EXPECT_FALSE(tok->add_bos_default());
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_EQ(tok->vocab_size(), 260);
}

TEST(TokenizerJsonTest, AddedTokens) {
  auto tok = Load(TinyTokenizer());
  ASSERT_NE(tok, nullptr);
  // Non-special added tokens are always split out (HF), special ones only with parse_special.
  EXPECT_EQ(tok->Encode("a<tag><s>", false, false),
            (std::vector<int32_t>{Byte('a'), 259, Byte('<'), Byte('s'), Byte('>')}));
  EXPECT_EQ(tok->Encode("a<tag><s>", false, true), (std::vector<int32_t>{Byte('a'), 259, 258}));
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{Byte('a'), 259, 258}), "a<tag>");
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{Byte('a'), 259, 258}, true), "a<tag><s>");
}

TEST(TokenizerJsonTest, TemplateProcessingAddsBos) {
  json j = TinyTokenizer();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->bos_id(), 258);
  EXPECT_EQ(tok->Encode("abc", true), (std::vector<int32_t>{258, 257}));
}

TEST(TokenizerJsonTest, ConfigAddsBosAndPrefixSpace) {
  json j = TinyTokenizer();
  j["pre_tokenizer"]["add_prefix_space"] = true;
  auto tok = Load(j, R"({"add_bos_token": true, "bos_token": {"content": "<s>"}, "eos_token": "<s>"})");
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->eos_id(), 258);
  EXPECT_EQ(tok->Encode("abc", true), (std::vector<int32_t>{258, Byte(' '), 257}));
}

void ExpectBad(const std::string& text, const std::string& needle) {
  auto tok = Tokenizer::FromHfJsonText(text, "", "bad/tokenizer.json");
  ASSERT_FALSE(tok.ok()) << needle;
  EXPECT_EQ(tok.error().exit_code(), 2);
  EXPECT_NE(tok.error().message.find("bad/tokenizer.json"), std::string::npos) << tok.error().message;
  EXPECT_NE(tok.error().message.find(needle), std::string::npos) << tok.error().message;
}

TEST(TokenizerJsonTest, MalformedFilesAreErrors) {
  ExpectBad("{not json", "not a valid JSON");
  ExpectBad("", "not a valid JSON");
  ExpectBad("[1, 2]", "not a valid JSON object");
  ExpectBad(R"({"model": {"type": "BPE", "merges": []}})", "model.vocab");
  ExpectBad(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})", "WordPiece");
  ExpectBad(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})", "model.vocab['a']");
  json j = TinyTokenizer();
  j["model"]["merges"].push_back("a zz");
  ExpectBad(j.dump(), "'zz'");
  j = TinyTokenizer();
  j["model"]["merges"] = json::array({json::array({"a", 7})});
  ExpectBad(j.dump(), "merges");
  j = TinyTokenizer();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  ExpectBad(j.dump(), "Whitespace");
  j = TinyTokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  ExpectBad(j.dump(), "regex");
  j = TinyTokenizer();
  j.erase("pre_tokenizer");
  j.erase("decoder");
  ExpectBad(j.dump(), "ByteLevel");
}

TEST(TokenizerJsonTest, DirectoryErrorsNameTheFile) {
  const auto dir = testing::MakeTempDir("tok-json");
  auto missing = Tokenizer::FromHfDir(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code(), 2);
  EXPECT_NE(missing.error().message.find((dir / "tokenizer.json").string()), std::string::npos);

  std::ofstream(dir / "tokenizer.json") << "this is not json";
  auto bad = Tokenizer::FromHfDir(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code(), 2);
  EXPECT_NE(bad.error().message.find((dir / "tokenizer.json").string()), std::string::npos);

  std::ofstream(dir / "tokenizer.json", std::ios::trunc) << TinyTokenizer().dump();
  std::ofstream(dir / "tokenizer_config.json") << "{oops";
  auto bad_config = Tokenizer::FromHfDir(dir.string());
  ASSERT_FALSE(bad_config.ok());
  EXPECT_NE(bad_config.error().message.find("tokenizer_config.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
