// Phi-3 and Phi-4 configurations (model/config.h; docs/models-phi3.md): what is read
// from a GGUF and a config.json (LongRoPE's two factor sets, the original context, the cos/sin
// scale), and what is refused in one line — a partial rotary dimension, broken or misplaced LongRoPE
// factors. A phi3 GGUF's sliding window is declared but not applied (llama.cpp disables it); a
// config.json's is applied (transformers does).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "io_builders.h"
#include "model/config.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
constexpr uint32_t kGgmlF32 = 0;

testing::GgufBuilder Phi3Gguf(uint32_t rope_dims = 16) {
  testing::GgufBuilder b;
  b.Str("general.architecture", "phi3")
      .U32("phi3.block_count", 3)
      .U32("phi3.embedding_length", 64)
      .U32("phi3.attention.head_count", 4)
      .U32("phi3.attention.head_count_kv", 2)
      .U32("phi3.context_length", 4096)
      .U32("phi3.feed_forward_length", 128)
      .U32("phi3.rope.dimension_count", rope_dims)
      .F32("phi3.attention.layer_norm_rms_epsilon", 1e-5f)
      .F32("phi3.rope.freq_base", 10000.0f);
  b.AddTensor("token_embd.weight", {64, 256}, kGgmlF32, testing::PodBytes(std::vector<float>(64 * 256)));
  return b;
}

Expected<ModelConfig> FromGguf(const testing::GgufBuilder& b, std::vector<uint8_t>* keep) {
  *keep = b.Build();
  KV_ASSIGN_OR_RETURN(GgufFile g, GgufFile::Parse(keep->data(), keep->size(), "phi3.gguf"));
  return ConfigFromGguf(g);
}

TEST(ModelPhi3Config, AGgufsSlidingWindowIsDeclaredNotApplied) {
  std::vector<uint8_t> bytes;
  const auto plain = FromGguf(Phi3Gguf(), &bytes);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->arch, Arch::kPhi3);
  EXPECT_EQ(plain->sliding_window, 0);
  EXPECT_EQ(plain->unapplied_sliding_window, 0);
  const auto swa = FromGguf(Phi3Gguf().U32("phi3.attention.sliding_window", 2047), &bytes);
  ASSERT_TRUE(swa.ok()) << swa.error().message;
  EXPECT_EQ(swa->sliding_window, 0);
  EXPECT_EQ(swa->unapplied_sliding_window, 2047);
}

testing::GgufBuilder& AddFactors(testing::GgufBuilder& b, const char* name, std::vector<float> f) {
  return b.AddTensor(name, {static_cast<uint64_t>(f.size())}, kGgmlF32, testing::PodBytes(f));
}

TEST(ModelPhi3Config, ReadsLongRopeFromAGguf) {
  std::vector<uint8_t> bytes;
  testing::GgufBuilder b = Phi3Gguf();
  b.U32("phi3.rope.scaling.original_context_length", 256).F32("phi3.rope.scaling.attn_factor", 1.25f);
  AddFactors(b, "rope_factors_long.weight", {1, 2, 3, 4, 5, 6, 7, 8});
  AddFactors(b, "rope_factors_short.weight", std::vector<float>(8, 1.5f));
  const auto c = FromGguf(b, &bytes);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope.type, RopeType::kLongRope);
  EXPECT_EQ(c->rope.long_factors, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(c->rope.short_factors, std::vector<float>(8, 1.5f));
  EXPECT_EQ(c->rope.original_max_position_embeddings, 256);
  EXPECT_EQ(c->rope.attn_factor, 1.25);
  EXPECT_EQ(c->rope.ForContext(256).freq_divisors, c->rope.short_factors);
  EXPECT_EQ(c->rope.ForContext(257).freq_divisors, c->rope.long_factors);
  EXPECT_EQ(
      DescribeLongRope(*c, 4096).rfind("LongRoPE: the long factors at a context of 4096 (above the original 256)", 0),
      0u)
      << DescribeLongRope(*c, 4096);

  // Without the original context key, llama.cpp's default: the training context (so never long).
  testing::GgufBuilder d = Phi3Gguf();
  AddFactors(d, "rope_factors_long.weight", std::vector<float>(8, 2.0f));
  AddFactors(d, "rope_factors_short.weight", std::vector<float>(8, 1.0f));
  const auto dflt = FromGguf(d, &bytes);
  ASSERT_TRUE(dflt.ok()) << dflt.error().message;
  EXPECT_EQ(dflt->rope.original_max_position_embeddings, 4096);
  EXPECT_EQ(dflt->rope.attn_factor, 1.0);
  EXPECT_EQ(DescribeLongRope(*dflt, 4096).find("the short factors"), 10u);
}

// llama.cpp multiplies cos and sin by {arch}.rope.scaling.attn_factor for every model.
TEST(ModelPhi3Config, AGgufsAttentionFactorIsAppliedWithoutLongRope) {
  std::vector<uint8_t> bytes;
  const auto c = FromGguf(Phi3Gguf().F32("phi3.rope.scaling.attn_factor", 1.5f), &bytes);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope.type, RopeType::kDefault);
  EXPECT_EQ(c->rope.attn_factor, 1.5);
  EXPECT_EQ(DescribeLongRope(*c, 4096), "");
  const auto bad = FromGguf(Phi3Gguf().F32("phi3.rope.scaling.attn_factor", 0.0f), &bytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("attn_factor' is not positive"), std::string::npos) << bad.error().message;
}

TEST(ModelPhi3Config, PartialRotaryAndBrokenLongRopeAreRefusedInOneLine) {
  std::vector<uint8_t> bytes;
  const auto p = FromGguf(Phi3Gguf(7), &bytes);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("phi3.rope.dimension_count 7 rotates part of each head of 16 dimensions"),
            std::string::npos)
      << p.error().message;
  const auto partial = FromGguf(Phi3Gguf(12), &bytes);  // Phi-4-mini's shape: 96 of 128
  ASSERT_TRUE(partial.ok()) << partial.error().message;
  EXPECT_EQ(partial->rope.dims, 12);
  EXPECT_EQ(RopeInvFreq(partial->rope, partial->head_dim).size(), 6u);

  const auto expect_refused = [&](testing::GgufBuilder b, const std::string& what) {
    const auto l = FromGguf(b, &bytes);
    ASSERT_FALSE(l.ok()) << what;
    EXPECT_NE(l.error().message.find(what), std::string::npos) << l.error().message;
    EXPECT_EQ(l.error().message.find('\n'), std::string::npos);
  };
  testing::GgufBuilder one = Phi3Gguf();
  AddFactors(one, "rope_factors_long.weight", std::vector<float>(8, 1.0f));
  expect_refused(one, "tensor 'rope_factors_short.weight' is missing beside its LongRoPE twin");
  testing::GgufBuilder short_set = Phi3Gguf();
  AddFactors(short_set, "rope_factors_long.weight", std::vector<float>(4, 1.0f));
  AddFactors(short_set, "rope_factors_short.weight", std::vector<float>(8, 1.0f));
  expect_refused(short_set, "tensor 'rope_factors_long.weight' has 4 elements, expected rotary dims/2 = 8");
  testing::GgufBuilder zero = Phi3Gguf();
  AddFactors(zero, "rope_factors_long.weight", std::vector<float>(8, 1.0f));
  AddFactors(zero, "rope_factors_short.weight", {1, 1, 1, 0, 1, 1, 1, 1});
  expect_refused(zero, "tensor 'rope_factors_short.weight' holds 0");
  testing::GgufBuilder with_freqs = Phi3Gguf();
  AddFactors(with_freqs, "rope_freqs.weight", std::vector<float>(8, 1.0f));
  AddFactors(with_freqs, "rope_factors_long.weight", std::vector<float>(8, 1.0f));
  AddFactors(with_freqs, "rope_factors_short.weight", std::vector<float>(8, 1.0f));
  expect_refused(with_freqs, "LongRoPE factors beside rope scaling 'llama3' or rope_freqs.weight");
}

fs::path WriteConfig(const nlohmann::json& j) {
  const fs::path dir = testing::MakeTempDir("phi3-config");
  std::ofstream(dir / "config.json") << j.dump();
  return dir / "config.json";
}

nlohmann::json Phi3Json() {
  return {{"model_type", "phi3"},     {"hidden_size", 64},
          {"num_hidden_layers", 3},   {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"intermediate_size", 128},
          {"vocab_size", 256},        {"max_position_embeddings", 4096},
          {"rms_norm_eps", 1e-5},     {"rope_theta", 10000.0},
          {"hidden_act", "silu"}};
}

TEST(ModelPhi3Config, AConfigJsonsWindowIsAppliedAndItsUnsupportedKeysRefused) {
  nlohmann::json j = Phi3Json();
  j["sliding_window"] = 2047;
  const auto swa = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_TRUE(swa.ok()) << swa.error().message;
  EXPECT_EQ(swa->arch, Arch::kPhi3);
  EXPECT_EQ(swa->sliding_window, 2047);  // transformers' Phi3Attention applies it

  j = Phi3Json();
  j["partial_rotary_factor"] = 0.75;  // Phi-4-mini: int(16 · 0.75) = 12 dims rotate
  const auto partial = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_TRUE(partial.ok()) << partial.error().message;
  EXPECT_EQ(partial->rope.dims, 12);
  j["partial_rotary_factor"] = 0.7;  // int(11.2) = 11: odd
  const auto odd = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("partial_rotary_factor 0.7 for phi3 (head_dim 16) is not supported"),
            std::string::npos)
      << odd.error().message;

  j = Phi3Json();
  j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}};
  const auto few = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.error().message.find("rope_scaling.long_factor"), std::string::npos) << few.error().message;

  j = Phi3Json();
  j["rope_scaling"] = {{"type", "longrope"},
                       {"long_factor", std::vector<double>(8, 2.0)},
                       {"short_factor", std::vector<double>(8, 1.0)},
                       {"short_mscale", 1.1}};
  const auto mscale = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(mscale.ok());
  EXPECT_NE(mscale.error().message.find("rope_scaling.short_mscale is not supported"), std::string::npos)
      << mscale.error().message;
}

// Phi-3-mini-128k's spelling: rope_scaling {type, long_factor, short_factor} and the original
// context at the top level; the attention factor from max_position_embeddings / original.
TEST(ModelPhi3Config, ReadsLongRopeFromAConfigJson) {
  nlohmann::json j = Phi3Json();
  j["max_position_embeddings"] = 131072;
  j["original_max_position_embeddings"] = 4096;
  std::vector<double> long_f, short_f;
  for (int i = 0; i < 8; ++i) long_f.push_back(1 + i), short_f.push_back(1 + 0.01 * i);
  j["rope_scaling"] = {{"type", "su"}, {"long_factor", long_f}, {"short_factor", short_f}};
  const auto c = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope.type, RopeType::kLongRope);
  EXPECT_EQ(c->rope.original_max_position_embeddings, 4096);
  EXPECT_EQ(c->rope.long_factors[7], 8.0f);
  EXPECT_EQ(c->rope.short_factors[3], static_cast<float>(1.03));
  EXPECT_DOUBLE_EQ(c->rope.attn_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)));  // 1.1902
  EXPECT_FALSE(c->rope.UsesLongFactors(4096));
  EXPECT_TRUE(c->rope.UsesLongFactors(4097));

  j["rope_scaling"]["attention_factor"] = 1.0;  // an explicit factor wins
  const auto explicit_factor = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_TRUE(explicit_factor.ok()) << explicit_factor.error().message;
  EXPECT_EQ(explicit_factor->rope.attn_factor, 1.0);
}

// transformers v5 moves the RoPE keys into rope_parameters, partial_rotary_factor and the original
// context included (Phi-4-mini's shape: half of each 16-dim head here, 4 factors per set).
TEST(ModelPhi3Config, ReadsTransformersV5RopeParameters) {
  nlohmann::json j = Phi3Json();
  j.erase("rope_theta");
  j["max_position_embeddings"] = 131072;
  j["rope_parameters"] = {{"rope_type", "longrope"},
                          {"rope_theta", 10000.0},
                          {"partial_rotary_factor", 0.5},
                          {"original_max_position_embeddings", 4096},
                          {"long_factor", std::vector<double>(4, 2.0)},
                          {"short_factor", std::vector<double>(4, 1.0)}};
  const auto c = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope.dims, 8);
  EXPECT_EQ(c->rope.original_max_position_embeddings, 4096);
  EXPECT_EQ(c->rope.long_factors, std::vector<float>(4, 2.0f));

  // Per-layer-type entries are rope_parameters' only, and only full_attention / sliding_attention.
  j = Phi3Json();
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}},
                          {"chunked_attention", nlohmann::json::object()}};
  const auto unknown = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("rope_parameters.chunked_attention beside per-layer-type entries"),
            std::string::npos)
      << unknown.error().message;
  j = Phi3Json();
  j["rope_scaling"] = {{"full_attention", {{"rope_type", "default"}}}};
  const auto misplaced = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(misplaced.ok());
  EXPECT_NE(misplaced.error().message.find("rope_scaling per layer type"), std::string::npos)
      << misplaced.error().message;
}

}  // namespace
}  // namespace kvaudit
