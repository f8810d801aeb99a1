// The bundled model's tokenizer.json against transformers: docN.ids in the golden reference file
// are BOS (id 0) followed by the tokens of eval document N, truncated to 4096.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

using testing::BundledModelDir;
using testing::Fixture;

std::vector<std::string> ReadDocTexts() {
  std::ifstream in(Fixture("data/eval-docs.jsonl"));
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    texts.push_back(!j.is_discarded() && j.contains("text") && j["text"].is_string() ? j["text"].get<std::string>()
                                                                                     : std::string());
  }
  return texts;
}

std::unique_ptr<Tokenizer> LoadBundled() {
  auto tok = Tokenizer::FromHfDir(BundledModelDir().string());
  EXPECT_TRUE(tok.ok()) << tok.error().message;
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(TokenizerHfTest, BundledModelSettings) {
  auto tok = LoadBundled();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 8192);
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_TRUE(tok->add_bos_default());
  EXPECT_EQ(tok->TokenString(0), "<|endoftext|>");
}

TEST(TokenizerHfTest, MatchesTransformersIds) {
  auto tok = LoadBundled();
  ASSERT_NE(tok, nullptr);
  const auto docs = ReadDocTexts();
  ASSERT_GE(docs.size(), 12u);
  auto ref = SafetensorsFile::Open(Fixture("golden/kvq-code-16m-reference.safetensors").string());
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  for (int n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11}) {
    const std::string name = "doc" + std::to_string(n) + ".ids";
    const TensorView* t = ref->Find(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->dtype, DType::kI32) << name;
    std::vector<int32_t> want(static_cast<size_t>(t->numel()));
    ASSERT_EQ(t->nbytes, want.size() * sizeof(int32_t)) << name;
    std::memcpy(want.data(), t->data, t->nbytes);

    const auto got = tok->Encode(docs[n], tok->add_bos_default());
    ASSERT_GE(got.size(), want.size()) << name;
    size_t first_diff = want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      if (got[i] != want[i]) {
        first_diff = i;
        break;
      }
    }
    EXPECT_EQ(first_diff, want.size()) << name << ": first difference at token " << first_diff << " of " << want.size();
  }
}

TEST(TokenizerHfTest, RoundTripsEvalDocs) {
  auto tok = LoadBundled();
  ASSERT_NE(tok, nullptr);
  const auto docs = ReadDocTexts();
  ASSERT_GE(docs.size(), 12u);
  for (int n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11}) {
    const auto ids = tok->Encode(docs[n], /*add_bos=*/true);
    EXPECT_EQ(tok->Decode(ids), docs[n]) << "doc " << n;
  }
}

// Speed is reported, not asserted (timed tests are flaky); the target is well under 1 s.
TEST(TokenizerHfTest, EncodesPublicKldTextQuickly) {
  auto tok = LoadBundled();
  ASSERT_NE(tok, nullptr);
  std::ifstream in(Fixture("data/public-kld.txt"), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  ASSERT_GT(text.size(), 100000u);
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tok->Encode(text, true);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("[tokenizer] public-kld.txt: %zu bytes -> %zu tokens in %.1f ms\n", text.size(), ids.size(), ms);
  EXPECT_GT(ids.size(), 40000u);
  EXPECT_EQ(tok->Decode(ids), text);
}

}  // namespace
}  // namespace kvaudit
