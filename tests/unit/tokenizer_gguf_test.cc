// FromGguf on small GGUF files built in memory: unsupported tokenizer settings are errors that
// name the file and the offending value; a minimal gpt2 vocabulary works.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace kvaudit {
namespace {

// Writes GGUF v3 with metadata only (gguf.md): header, then key / type / value triples.
class GgufBuilder {
 public:
  void Str(const std::string& key, const std::string& v) {
    Key(key, 8);
    PutStr(v);
    ++n_;
  }
  void Int(const std::string& key, int32_t v) {
    Key(key, 5);
    Put(v);
    ++n_;
  }
  void StrArray(const std::string& key, const std::vector<std::string>& v) {
    Key(key, 9);
    Put<uint32_t>(8);
    Put<uint64_t>(v.size());
    for (const auto& s : v) PutStr(s);
    ++n_;
  }
  std::vector<uint8_t> Bytes() const {
    // Fixed 24-byte header: magic, u32 version 3, u64 tensor count 0, u64 key/value count.
    std::vector<uint8_t> out(24 + body_.size());
    const uint32_t version = 3;
    const uint64_t n_tensors = 0;
    std::memcpy(out.data(), "GGUF", 4);
    std::memcpy(out.data() + 4, &version, 4);
    std::memcpy(out.data() + 8, &n_tensors, 8);
    std::memcpy(out.data() + 16, &n_, 8);
    if (!body_.empty()) std::memcpy(out.data() + 24, body_.data(), body_.size());
    return out;
  }

 private:
  template <class T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    body_.insert(body_.end(), p, p + sizeof(T));
  }
  void PutStr(const std::string& s) {
    Put<uint64_t>(s.size());
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void Key(const std::string& key, uint32_t type) {
    PutStr(key);
    Put(type);
  }
  std::vector<uint8_t> body_;
  uint64_t n_ = 0;
};

GgufBuilder TinyGpt2(const std::string& pre) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(ByteLevelTable::Get().Encode(static_cast<uint8_t>(b)));
  tokens.push_back("hi");
  GgufBuilder g;
  g.Str("tokenizer.ggml.model", "gpt2");
  g.Str("tokenizer.ggml.pre", pre);
  g.StrArray("tokenizer.ggml.tokens", tokens);
  g.StrArray("tokenizer.ggml.merges", {"h i", "q zz"});  // the second names no token: skipped
  return g;
}

Expected<std::unique_ptr<Tokenizer>> Load(const std::vector<uint8_t>& bytes) {
  auto gguf = GgufFile::Parse(bytes.data(), bytes.size(), "mem.gguf");
  if (!gguf) return gguf.error();
  return Tokenizer::FromGguf(*gguf);
}

TEST(TokenizerGgufTest, MinimalGpt2Vocab) {
  const auto bytes = TinyGpt2("gpt-2").Bytes();
  auto tok = Load(bytes);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ((*tok)->Encode("hi!", false), (std::vector<int32_t>{256, '!'}));
  EXPECT_EQ((*tok)->bos_id(), -1);
  EXPECT_FALSE((*tok)->add_bos_default());
}

TEST(TokenizerGgufTest, UnknownPreTypeIsNamed) {
  const auto bytes = TinyGpt2("made-up-pre").Bytes();
  auto tok = Load(bytes);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error().exit_code(), 2);
  EXPECT_NE(tok.error().message.find("made-up-pre"), std::string::npos) << tok.error().message;
  EXPECT_NE(tok.error().message.find("mem.gguf"), std::string::npos) << tok.error().message;
}

TEST(TokenizerGgufTest, UnsupportedModelAndMissingKeys) {
  GgufBuilder bert;
  bert.Str("tokenizer.ggml.model", "bert");
  auto tok = Load(bert.Bytes());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("'bert'"), std::string::npos) << tok.error().message;

  GgufBuilder no_tokens;
  no_tokens.Str("tokenizer.ggml.model", "llama");
  tok = Load(no_tokens.Bytes());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("tokenizer.ggml.tokens"), std::string::npos) << tok.error().message;

  GgufBuilder bad_bos = TinyGpt2("gpt-2");
  bad_bos.Int("tokenizer.ggml.bos_token_id", 100000);
  tok = Load(bad_bos.Bytes());
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("bos_token_id"), std::string::npos) << tok.error().message;
}

}  // namespace
}  // namespace kvaudit
