// Model::LoadForTokenizing (docs/endpoints.md): an all-remote audit reads the
// model's config and tokenizer and no weight. The weightless load of the bundled model has the
// config and the tokenizer of the full load (same ids for every text); a directory with only
// config.json and tokenizer.json loads weightless and fails the full load with the usual line; a
// GGUF file's metadata alone gives the GGUF tokenizer; computing with a weightless model is an
// internal check failure; the config+tokenizer hash follows the tokenizer's merges.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "run/fingerprint.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::BundledModel;
using testing::BundledModelDir;

const std::vector<std::string> kTexts = {
    "def parse_config(path: str) -> dict:\n    return {\"retries\": 3, 'name': \"x\"}",
    "naïve café — 東京 ✓ \t tabs and  two  spaces 1234567", "<|im_start|>user\nhello<|im_end|>", ""};

void ExpectSameConfig(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.d_model, b.d_model);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.d_ff, b.d_ff);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.max_ctx, b.max_ctx);
  EXPECT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_EQ(a.rope.theta, b.rope.theta);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.bos_id, b.bos_id);
  EXPECT_EQ(a.eos_id, b.eos_id);
}

void ExpectSameTokenizer(const Model& a, const Model& b) {
  ASSERT_NE(a.tokenizer(), nullptr);
  ASSERT_NE(b.tokenizer(), nullptr);
  const Tokenizer& ta = *a.tokenizer();
  const Tokenizer& tb = *b.tokenizer();
  EXPECT_EQ(ta.vocab_size(), tb.vocab_size());
  EXPECT_EQ(ta.bos_id(), tb.bos_id());
  EXPECT_EQ(ta.eos_id(), tb.eos_id());
  EXPECT_EQ(ta.add_bos_default(), tb.add_bos_default());
  for (const std::string& text : kTexts) {
    const std::vector<int32_t> ids = ta.Encode(text, ta.add_bos_default());
    EXPECT_EQ(ids, tb.Encode(text, tb.add_bos_default())) << text;
    EXPECT_EQ(ta.Decode(ids), tb.Decode(ids)) << text;
  }
}

// A directory holding links to the bundled model's config and tokenizer files, no weights.
fs::path TokenizerOnlyDir(const std::string& tag) {
  const fs::path dir = testing::MakeTempDir(tag);
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json"}) {
    fs::create_symlink(fs::absolute(BundledModelDir() / f), dir / f);
  }
  return dir;
}

TEST(ModelTokenizingLoad, BundledDirHasTheFullLoadsConfigAndTokenizer) {
  auto light = Model::LoadForTokenizing(BundledModelDir().string());
  ASSERT_TRUE(light.ok()) << light.error().message;
  const Model& full = BundledModel();
  EXPECT_TRUE(full.has_weights());
  EXPECT_FALSE((*light)->has_weights());
  EXPECT_EQ((*light)->format(), "safetensors");
  ExpectSameConfig((*light)->config(), full.config());
  ExpectSameTokenizer(**light, full);
  // One identity of the config and tokenizer, whichever way the model was loaded; another kind than the weights'.
  EXPECT_EQ(HashModelConfigTokenizer(**light), HashModelConfigTokenizer(full));
  EXPECT_NE(HashModelConfigTokenizer(full), HashModel(full));
  EXPECT_EQ(IdentifyModel(full).kind, "weights");
  EXPECT_EQ(IdentifyModel(full).hash, HexHash(HashModel(full)));
  const ModelIdentity id = IdentifyModel(**light);
  EXPECT_EQ(id.kind, "config+tokenizer");
  EXPECT_EQ(id.hash, HexHash(HashModelConfigTokenizer(full)));
  EXPECT_NE((*light)->Describe().find("not loaded"), std::string::npos);
}

TEST(ModelTokenizingLoad, ConfigAndTokenizerOnlyDirLoadsWeightlessAndFailsTheFullLoad) {
  const fs::path dir = TokenizerOnlyDir("tok-only");
  auto light = Model::LoadForTokenizing(dir.string());
  ASSERT_TRUE(light.ok()) << light.error().message;
  ExpectSameConfig((*light)->config(), BundledModel().config());
  ExpectSameTokenizer(**light, BundledModel());
  EXPECT_EQ(HashModelConfigTokenizer(**light), HashModelConfigTokenizer(BundledModel()));
  auto full = Model::Load(dir.string());
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kBadInput);
  EXPECT_EQ(full.error().message, dir.string() +
                                      ": no model.safetensors or model.safetensors.index.json; hint: pass a "
                                      "Hugging Face model directory with safetensors weights (or a .gguf file)");
  // Without config.json there is no model at all: the usual config error, weightless or not.
  fs::remove(dir / "config.json");
  auto none = Model::LoadForTokenizing(dir.string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("config.json"), std::string::npos) << none.error().message;
}

TEST(ModelTokenizingLoad, GgufReadsOnlyMetadata) {
  const std::string path = testing::Fixture("models/gguf/kvq-code-16m-q4_k_m.gguf").string();
  auto light = Model::LoadForTokenizing(path);
  ASSERT_TRUE(light.ok()) << light.error().message;
  EXPECT_FALSE((*light)->has_weights());
  EXPECT_EQ((*light)->format(), "gguf");
  auto full = Model::Load(path);
  ASSERT_TRUE(full.ok()) << full.error().message;
  ExpectSameConfig((*light)->config(), (*full)->config());
  ExpectSameTokenizer(**light, **full);
  EXPECT_EQ(HashModelConfigTokenizer(**light), HashModelConfigTokenizer(**full));
}

// The tokenizer part of the hash is the tokenizer as loaded: one merge fewer is another identity.
TEST(ModelTokenizingLoad, ConfigTokenizerHashFollowsTheMerges) {
  const fs::path dir = testing::MakeTempDir("tok-merge");
  fs::create_symlink(fs::absolute(BundledModelDir() / "config.json"), dir / "config.json");
  fs::create_symlink(fs::absolute(BundledModelDir() / "tokenizer_config.json"), dir / "tokenizer_config.json");
  nlohmann::json tok = nlohmann::json::parse(std::ifstream(BundledModelDir() / "tokenizer.json"));
  ASSERT_TRUE(tok["model"]["merges"].is_array());
  ASSERT_GT(tok["model"]["merges"].size(), 100u);
  tok["model"]["merges"].erase(tok["model"]["merges"].size() - 1);
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  auto edited = Model::LoadForTokenizing(dir.string());
  ASSERT_TRUE(edited.ok()) << edited.error().message;
  EXPECT_NE(HashModelConfigTokenizer(**edited), HashModelConfigTokenizer(BundledModel()));
}

using ModelTokenizingLoadDeathTest = ::testing::Test;

TEST_F(ModelTokenizingLoadDeathTest, ComputingWithAWeightlessModelIsAnInternalCheckFailure) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto light = Model::LoadForTokenizing(BundledModelDir().string());
  ASSERT_TRUE(light.ok()) << light.error().message;
  const Model& m = **light;
  EXPECT_DEATH(
      {
        auto cache = MakeF32Cache(m.config(), 16);
        ThreadPool pool(1);
        Forward f(m, *cache, pool);
      },
      "loaded without weights");
  EXPECT_DEATH(HashModel(m), "loaded for tokenizing only");
}

}  // namespace
}  // namespace kvaudit
