// Edge cases for both algorithms: empty and whitespace-only text, multi-byte and invalid UTF-8,
// special-token text with parse_special on and off, decode conventions.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

using testing::BundledModelDir;
using testing::Fixture;

class TokenizerEdgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto bpe = Tokenizer::FromHfDir(BundledModelDir().string());
    ASSERT_TRUE(bpe.ok()) << bpe.error().message;
    bpe_ = std::move(bpe).value();
    auto gguf = GgufFile::Open(Fixture("tokenizers/ggml-vocab-llama-spm.gguf").string());
    ASSERT_TRUE(gguf.ok()) << gguf.error().message;
    auto spm = Tokenizer::FromGguf(*gguf);
    ASSERT_TRUE(spm.ok()) << spm.error().message;
    spm_ = std::move(spm).value();
  }
  std::unique_ptr<Tokenizer> bpe_;  // bundled model: byte-level BPE, BOS = EOS = 0
  std::unique_ptr<Tokenizer> spm_;  // Llama-2 SentencePiece: <unk>=0 <s>=1 </s>=2
};

TEST_F(TokenizerEdgeTest, EmptyText) {
  EXPECT_TRUE(bpe_->Encode("", false).empty());
  EXPECT_EQ(bpe_->Encode("", true), std::vector<int32_t>{0});
  EXPECT_TRUE(spm_->Encode("", false).empty());
  EXPECT_EQ(spm_->Encode("", true), std::vector<int32_t>{1});
  EXPECT_EQ(bpe_->Decode({}), "");
  EXPECT_EQ(spm_->Decode(std::vector<int32_t>{1}), "");
}

TEST_F(TokenizerEdgeTest, WhitespaceOnly) {
  for (const std::string s : {" ", "   ", "\n", "\t\n  \r\n", "        \n\n"}) {
    const auto ids = bpe_->Encode(s, false);
    EXPECT_FALSE(ids.empty()) << "'" << s << "'";
    EXPECT_EQ(bpe_->Decode(ids), s);
    const auto spm_ids = spm_->Encode(s, true);
    EXPECT_GT(spm_ids.size(), 1u);
    EXPECT_EQ(spm_->Decode(spm_ids), s);
  }
}

TEST_F(TokenizerEdgeTest, MultiByteUtf8RoundTrips) {
  const std::string text = "héllo wörld — 世界 こんにちは 🦙🚀 😶‍🌫️ \u00A0x";
  EXPECT_EQ(bpe_->Decode(bpe_->Encode(text, true)), text);
  // Llama-2 has no token for most emoji: they fall back to <0xNN> byte tokens and come back whole.
  const auto ids = spm_->Encode(text, true);
  EXPECT_EQ(spm_->Decode(ids), text);
  EXPECT_NE(spm_->TokenString(ids.back()), "");
}

TEST_F(TokenizerEdgeTest, InvalidUtf8DoesNotCrash) {
  const std::string text = std::string("ab\xff\xfe cd \xc3") + "\x80\x80 \xe2\x82 end\xf0";
  const auto ids = bpe_->Encode(text, false);
  EXPECT_EQ(bpe_->Decode(ids), text);  // byte-level BPE covers every byte
  const auto spm_ids = spm_->Encode(text, false);
  EXPECT_FALSE(spm_ids.empty());
  (void)spm_->Decode(spm_ids);
  (void)bpe_->Decode(std::vector<int32_t>{-5, 1 << 30, 3});  // out-of-range ids are skipped
}

TEST_F(TokenizerEdgeTest, SpecialTokenTextByteLevel) {
  const std::string text = "x = 1<|endoftext|>y = 2";
  const auto on = bpe_->Encode(text, false, /*parse_special=*/true);
  const auto off = bpe_->Encode(text, false, /*parse_special=*/false);
  EXPECT_EQ(std::count(on.begin(), on.end(), 0), 1);
  EXPECT_EQ(std::count(off.begin(), off.end(), 0), 0);
  EXPECT_GT(off.size(), on.size());
  EXPECT_EQ(bpe_->Decode(on, /*render_special=*/true), text);
  EXPECT_EQ(bpe_->Decode(on, /*render_special=*/false), "x = 1y = 2");
  EXPECT_EQ(bpe_->Decode(off), text);
}

TEST_F(TokenizerEdgeTest, SpecialTokenTextSpm) {
  const auto on = spm_->Encode("Hi</s>there", false, true);
  EXPECT_EQ(std::count(on.begin(), on.end(), 2), 1);
  const auto off = spm_->Encode("Hi</s>there", false, false);
  EXPECT_EQ(std::count(off.begin(), off.end(), 2), 0);
  EXPECT_EQ(spm_->Decode(off), "Hi</s>there");
}

TEST_F(TokenizerEdgeTest, SpmSpacePrefixAndDecode) {
  // " Hello" -> "▁▁Hello" (llama.cpp prefixes a space even when the text starts with one).
  const auto ids = spm_->Encode("Hello world", false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(spm_->TokenString(ids[0]), "\xE2\x96\x81Hello");
  EXPECT_EQ(spm_->Decode(ids), "Hello world");
  EXPECT_EQ(spm_->Decode(spm_->Encode(" Hello", true)), " Hello");
  EXPECT_EQ(spm_->Decode(spm_->Encode("a\nb", true), /*render_special=*/true), "<s>a\nb");
}

}  // namespace
}  // namespace kvaudit
