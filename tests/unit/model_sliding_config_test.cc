// Per-layer sliding windows from a transformers config.json (model/config.h, config_layers.h): a
// mixed `layer_types` list, and Qwen2's max_window_layers (layers from it on slide), become
// per-layer flags; a uniform list stays "every layer alike".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

Expected<ModelConfig> FromJson(nlohmann::json j) {
  j.update({{"hidden_size", 64},
            {"num_hidden_layers", 4},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"intermediate_size", 128},
            {"vocab_size", 256},
            {"max_position_embeddings", 4096}});
  const fs::path dir = testing::MakeTempDir("sliding-config");
  std::ofstream(dir / "config.json") << j.dump();
  Expected<ModelConfig> c = ConfigFromHfJson((dir / "config.json").string());
  fs::remove_all(dir);
  return c;
}

TEST(ModelSlidingConfig, MixedLayerTypesBecomePerLayerWindows) {
  auto c = FromJson({{"model_type", "mistral"},
                     {"sliding_window", 32},
                     {"layer_types", {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->sliding_window, 32);
  EXPECT_EQ(c->layer_window(0), 32);
  EXPECT_EQ(c->layer_window(1), 0);
  EXPECT_EQ(c->n_sliding_layers(), 2);

  auto all = FromJson({{"model_type", "mistral"},
                       {"sliding_window", 32},
                       {"layer_types", std::vector<std::string>(4, "sliding_attention")}});
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_TRUE(all->sliding_layers.empty());
  EXPECT_EQ(all->n_sliding_layers(), 4);

  auto none = FromJson({{"model_type", "mistral"},
                        {"sliding_window", 32},
                        {"layer_types", std::vector<std::string>(4, "full_attention")}});
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(none->sliding_window, 0);

  auto bad = FromJson({{"model_type", "mistral"}, {"sliding_window", 32}, {"layer_types", {"sliding_attention"}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("layer_types"), std::string::npos) << bad.error().message;
}

TEST(ModelSlidingConfig, QwenMaxWindowLayersSlidesTheLayersFromItOn) {
  auto c = FromJson(
      {{"model_type", "qwen2"}, {"sliding_window", 64}, {"use_sliding_window", true}, {"max_window_layers", 2}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->layer_window(0), 0);
  EXPECT_EQ(c->layer_window(1), 0);
  EXPECT_EQ(c->layer_window(2), 64);
  EXPECT_EQ(c->layer_window(3), 64);

  auto off = FromJson({{"model_type", "qwen2"}, {"sliding_window", 64}, {"use_sliding_window", false}});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->n_sliding_layers(), 0);
}

}  // namespace
}  // namespace kvaudit
