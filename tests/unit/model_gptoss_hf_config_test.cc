// gpt-oss from a transformers config.json (model/config_layers.h ReadHfGptOss, ReadHfYarn) and
// its MXFP4 blocks (model/weights.h RepackHfMxfp4Block): what is read, the keys that would change
// the computation into one kvaudit does not run (one BadInput line naming the key), YaRN's
// `truncate`, and the nibble order of the published blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "ops/rope.h"
#include "quant/quant_type.h"
#include "support/fixtures.h"
#include "support/gpt_oss_hf_config.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

nlohmann::json GptOssConfigJson() { return testing::TinyGptOssHfConfig(/*truncate=*/false); }

Expected<ModelConfig> GptOssFromJson(const nlohmann::json& j) {
  const fs::path dir = testing::MakeTempDir("gptoss-config");
  std::ofstream(dir / "config.json") << j.dump();
  Expected<ModelConfig> c = ConfigFromHfJson((dir / "config.json").string());
  fs::remove_all(dir);
  return c;
}

void ExpectRefused(const nlohmann::json& j, const std::string& needle) {
  Expected<ModelConfig> c = GptOssFromJson(j);
  ASSERT_FALSE(c.ok()) << needle;
  const std::string& m = c.error().message;
  EXPECT_NE(m.find(needle), std::string::npos) << m;
  EXPECT_NE(m.find("hint: "), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(ModelGptOssHfConfig, ThePublishedConfigReadsAsTheGgufDescribesIt) {
  auto c = GptOssFromJson(GptOssConfigJson());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, Arch::kGptOss);
  EXPECT_EQ(c->n_experts, 4);
  EXPECT_EQ(c->n_experts_used, 2);
  EXPECT_EQ(c->expert_ff, 64);
  EXPECT_TRUE(c->moe_softmax_after_topk && c->expert_bias && c->clamped_swiglu);
  EXPECT_FALSE(c->norm_topk);
  EXPECT_TRUE(c->attn_qkv_bias && c->attn_o_bias);
  EXPECT_EQ(c->sliding_window, 8);
  EXPECT_EQ(c->sliding_layers, (std::vector<uint8_t>{1, 0, 1}));  // "sliding_attention" if (i + 1) % 2
  EXPECT_EQ(c->rope.type, RopeType::kYarn);
  EXPECT_EQ(c->rope.factor, 32.0);
  EXPECT_EQ(c->rope.original_max_position_embeddings, 4096);
  EXPECT_FALSE(c->rope.yarn_round_dims);  // truncate: false
  EXPECT_DOUBLE_EQ(c->rope.attn_factor, 1.0 + 0.1 * std::log(32.0));
  EXPECT_FALSE(c->rope_local.has_value());
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5f);

  nlohmann::json j = GptOssConfigJson();
  j.erase("num_experts_per_tok");  // experts_per_token alone: gpt-oss's own name
  j["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention"};
  j["rope_scaling"].erase("truncate");  // transformers' default: rounded, as llama.cpp
  j["attention_bias"] = false;          // GptOssConfig sets it true whatever the file says
  j["hidden_act"] = "gelu";             // GptOssExperts does not read it
  auto d = GptOssFromJson(j);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->n_experts_used, 2);
  EXPECT_EQ(d->sliding_layers, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_TRUE(d->rope.yarn_round_dims);
  EXPECT_TRUE(d->attn_qkv_bias && d->attn_o_bias);
}

TEST(ModelGptOssHfConfig, KeysThatChangeTheComputationAreRefusedByName) {
  nlohmann::json j = GptOssConfigJson();
  j["swiglu_limit"] = 10.0;
  ExpectRefused(j, "swiglu_limit 10.0");
  j = GptOssConfigJson();
  j["experts_per_token"] = 4;
  ExpectRefused(j, "num_experts_per_tok 2 and experts_per_token 4 disagree");
  j = GptOssConfigJson();
  j.erase("num_experts_per_tok");
  j.erase("experts_per_token");
  ExpectRefused(j, "missing key 'num_experts_per_tok'");
  j = GptOssConfigJson();
  j.erase("num_local_experts");
  ExpectRefused(j, "missing key 'num_local_experts'");
  j = GptOssConfigJson();
  j["sliding_window"] = 0;
  ExpectRefused(j, "key 'sliding_window' must be a positive integer");
  j = GptOssConfigJson();
  j["rope_scaling"]["beta_fast"] = -1.0;
  ExpectRefused(j, "key 'rope_scaling.beta_fast' must be a positive number");
  j = GptOssConfigJson();
  j["rope_scaling"]["truncate"] = "no";
  ExpectRefused(j, "key 'truncate' must be true or false");
  j = GptOssConfigJson();
  j["rope_scaling"]["rope_type"] = "dynamic";
  ExpectRefused(j, "unsupported rope type 'dynamic'");
  j = GptOssConfigJson();
  j["model_type"] = "gpt_oss_2";
  ExpectRefused(j, "gemma3_text and gpt_oss models");
}

// transformers' YaRN keys beyond gpt-oss's: the betas, attention_factor, DeepSeek's mscale pair
// (get_mscale(f, mscale) / get_mscale(f, mscale_all_dim)), and the original context's default.
TEST(ModelGptOssHfConfig, YarnKeysFollowTransformers) {
  nlohmann::json j = GptOssConfigJson();
  j["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 16.0}, {"beta_slow", 2.0}, {"attention_factor", 1.25}};
  auto a = GptOssFromJson(j);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->rope.beta_fast, 16.0);
  EXPECT_EQ(a->rope.beta_slow, 2.0);
  EXPECT_EQ(a->rope.attn_factor, 1.25);
  EXPECT_EQ(a->rope.original_max_position_embeddings, 131072);  // absent: max_position_embeddings
  EXPECT_TRUE(a->rope.yarn_round_dims);
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"mscale", 2.0}, {"mscale_all_dim", 1.0}};
  auto m = GptOssFromJson(j);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->rope.attn_factor, (0.2 * std::log(4.0) + 1) / (0.1 * std::log(4.0) + 1));
}

// truncate=false keeps the correction dims fractional (transformers find_correction_range), both
// clamped to [0, head_dim − 1]; the frequencies then differ from the rounded (llama.cpp) ones.
TEST(ModelGptOssHfConfig, UnroundedYarnDimsFollowTransformers) {
  RopeParams p;
  p.type = RopeType::kYarn;
  p.theta = 150000.0;
  p.factor = 32.0;
  p.original_max_position_embeddings = 4096;
  const int d = 64;
  p.yarn_round_dims = false;
  const std::vector<float> unrounded = RopeInvFreq(p, d);
  p.yarn_round_dims = true;
  const std::vector<float> rounded = RopeInvFreq(p, d);
  ASSERT_EQ(unrounded.size(), 32u);
  EXPECT_NE(unrounded, rounded);
  // The same arithmetic written out: the dims as doubles clamped to [0, d − 1], the ramp in f32.
  auto expect_blend = [&](const std::vector<float>& got, double beta_slow) {
    auto corr = [&](double rot) { return d * std::log(4096 / (rot * 2 * M_PI)) / (2 * std::log(150000.0)); };
    const double lo = std::max(0.0, corr(32.0)), hi = std::min(d - 1.0, corr(beta_slow));
    for (int i = 0; i < d / 2; ++i) {
      const float base = 1.0f / static_cast<float>(std::pow(150000.0, static_cast<double>(2.0f * i / d)));
      const float y = (static_cast<float>(i) - static_cast<float>(lo)) / static_cast<float>(hi - lo);
      const float extrapolate = 1.0f - std::min(1.0f, std::max(0.0f, y));
      EXPECT_EQ(got[i], (base / 32.0f) * (1.0f - extrapolate) + base * extrapolate) << i;
    }
  };
  expect_blend(unrounded, 1.0);
  // beta_slow 1e-9 puts the high dim (about 73) past the last pair, 63: clamped even when unrounded.
  p.yarn_round_dims = false;
  p.beta_slow = 1e-9;
  expect_blend(RopeInvFreq(p, d), 1e-9);
}

// HF blocks: element 2k in byte k's low nibble, 2k+1 in its high one, value E2M1[code]·2^(s−127)
// (transformers convert_moe_packed_tensors). Repacked into ggml's block_mxfp4, kvaudit's MXFP4
// dequantizer gives those values for every code and position.
TEST(ModelGptOssHfConfig, HfMxfp4BlocksRepackToTheSameValues) {
  const float kE2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (const uint8_t scale : {uint8_t{127}, uint8_t{120}, uint8_t{130}}) {
    uint8_t hf[16];
    for (int k = 0; k < 16; ++k) hf[k] = static_cast<uint8_t>((k * 7 + scale) & 0xFF);
    uint8_t ggml[17];
    RepackHfMxfp4Block(hf, scale, ggml);
    float got[32];
    GetQuantTraits(QuantType::kMXFP4).dequantize_ref(ggml, got, 32);
    for (int k = 0; k < 32; ++k) {
      const int code = k % 2 == 0 ? hf[k / 2] & 0x0F : hf[k / 2] >> 4;
      EXPECT_EQ(got[k], std::ldexp(kE2m1[code], scale - 127)) << "element " << k << " scale " << int{scale};
    }
  }
}

}  // namespace
}  // namespace kvaudit
