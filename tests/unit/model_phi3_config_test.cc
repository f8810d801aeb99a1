// Phi-3 and Phi-4 configurations (model/config.h; docs/models-phi3.md): what is read
// from a GGUF and a config.json, and what is refused in one line — a partial rotary dimension and
// LongRoPE, which kvaudit does not run yet. A phi3 GGUF's sliding window is declared but not applied
// (llama.cpp disables it); a config.json's is applied (transformers does).
#include <gtest/gtest.h>

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

TEST(ModelPhi3Config, PartialRotaryAndLongRopeAreRefusedInOneLine) {
  std::vector<uint8_t> bytes;
  const auto p = FromGguf(Phi3Gguf(12), &bytes);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("phi3.rope.dimension_count 12 rotates part of each head of 16 dimensions"),
            std::string::npos)
      << p.error().message;

  testing::GgufBuilder longrope = Phi3Gguf();
  longrope.AddTensor("rope_factors_long.weight", {8}, kGgmlF32, testing::PodBytes(std::vector<float>(8, 1.0f)));
  const auto l = FromGguf(longrope, &bytes);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("tensor 'rope_factors_long.weight': LongRoPE"), std::string::npos)
      << l.error().message;
  EXPECT_EQ(l.error().message.find('\n'), std::string::npos);
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
  j["partial_rotary_factor"] = 0.75;  // Phi-4-mini
  const auto partial = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message.find("partial_rotary_factor 0.75 rotates part of each head"), std::string::npos)
      << partial.error().message;

  j = Phi3Json();
  j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}};
  const auto longrope = ConfigFromHfJson(WriteConfig(j).string());
  ASSERT_FALSE(longrope.ok());
  EXPECT_NE(longrope.error().message.find("unsupported rope type 'longrope' in rope_scaling (Phi-3's LongRoPE"),
            std::string::npos)
      << longrope.error().message;
}

}  // namespace
}  // namespace kvaudit
