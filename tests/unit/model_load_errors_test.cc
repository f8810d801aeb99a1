// Bad model directories: each must fail with exit code 2 and a message naming the key or tensor.
// Built in temp dirs from the golden llama config and small hand-written safetensors files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "model/model.h"
#include "model/weights.h"
#include "support/fixtures.h"
#include "support/tiny_llama.h"

namespace kvaudit {
using ::kvaudit::testing::Fixture;
using ::kvaudit::testing::MakeTempDir;
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

Json GoldenLlamaConfig() {
  std::ifstream in(Fixture("golden/llama/config.json"));
  return Json::parse(in, nullptr, false);
}

// Writes config.json and a model.safetensors holding zero f32 tensors of the given shapes.
fs::path WriteModel(const std::string& tag, const Json& config,
                    const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  const fs::path dir = MakeTempDir(tag);
  std::ofstream(dir / "config.json") << config.dump();
  std::vector<testing::F32Tensor> zeros;
  for (const auto& [name, shape] : tensors) zeros.push_back({name, shape, {}});
  testing::WriteF32Safetensors(dir / "model.safetensors", zeros);
  return dir;
}

// All tensors of the golden llama config (hidden 64, 4 heads x 16, 2 kv heads, ffn 160, vocab 256).
std::vector<std::pair<std::string, std::vector<int64_t>>> LlamaTensors(int layers) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> t = {
      {"model.embed_tokens.weight", {256, 64}}, {"model.norm.weight", {64}}, {"lm_head.weight", {256, 64}}};
  for (int i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {64}});
    t.push_back({p + "self_attn.q_proj.weight", {64, 64}});
    t.push_back({p + "self_attn.k_proj.weight", {32, 64}});
    t.push_back({p + "self_attn.v_proj.weight", {32, 64}});
    t.push_back({p + "self_attn.o_proj.weight", {64, 64}});
    t.push_back({p + "post_attention_layernorm.weight", {64}});
    t.push_back({p + "mlp.gate_proj.weight", {160, 64}});
    t.push_back({p + "mlp.up_proj.weight", {160, 64}});
    t.push_back({p + "mlp.down_proj.weight", {64, 160}});
  }
  return t;
}

void ExpectBadInput(const fs::path& dir, const std::string& needle) {
  auto m = Model::Load(dir.string());
  ASSERT_FALSE(m.ok()) << "loaded a bad model: " << dir;
  EXPECT_EQ(m.error().exit_code(), 2);
  EXPECT_NE(m.error().message.find(needle), std::string::npos) << m.error().message;
  EXPECT_EQ(m.error().message.find('\n'), std::string::npos) << "one line please";
}

TEST(ModelLoad, WellFormedSyntheticModelLoads) {
  const Json c = GoldenLlamaConfig();
  const fs::path dir = WriteModel("ok", c, LlamaTensors(3));
  auto m = Model::Load(dir.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->weights().n_params, 256 * 64 * 2 + 64 + 3 * (64 * 2 + 64 * 64 * 2 + 32 * 64 * 2 + 160 * 64 * 3));
  EXPECT_NE((*m)->Describe().find("llama"), std::string::npos);
}

TEST(ModelLoad, UnknownArchitectureIsNamed) {
  Json c = GoldenLlamaConfig();
  c["model_type"] = "gemma";
  c["architectures"] = {"GemmaForCausalLM"};
  ExpectBadInput(WriteModel("arch", c, LlamaTensors(3)), "unsupported architecture 'gemma'");
}

TEST(ModelLoad, MissingTensorIsNamed) {
  auto t = LlamaTensors(3);
  t.erase(std::remove_if(t.begin(), t.end(), [](auto& x) { return x.first == "model.layers.1.mlp.up_proj.weight"; }),
          t.end());
  ExpectBadInput(WriteModel("missing", GoldenLlamaConfig(), t), "missing tensor 'model.layers.1.mlp.up_proj.weight'");
}

TEST(ModelLoad, ShapeMismatchIsNamed) {
  auto t = LlamaTensors(3);
  for (auto& x : t)
    if (x.first == "model.layers.2.self_attn.k_proj.weight") x.second = {64, 64};
  ExpectBadInput(WriteModel("shape", GoldenLlamaConfig(), t),
                 "tensor 'model.layers.2.self_attn.k_proj.weight' has shape [64, 64], expected [32, 64]");
}

TEST(ModelLoad, MissingAndInconsistentConfigKeys) {
  Json c = GoldenLlamaConfig();
  c.erase("hidden_size");
  ExpectBadInput(WriteModel("key", c, LlamaTensors(3)), "missing key 'hidden_size'");
  c = GoldenLlamaConfig();
  c["num_key_value_heads"] = 3;
  ExpectBadInput(WriteModel("heads", c, LlamaTensors(3)), "not a multiple of num_key_value_heads 3");
  c = GoldenLlamaConfig();
  c["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  ExpectBadInput(WriteModel("rope", c, LlamaTensors(3)), "unsupported rope type 'dynamic'");
  c = GoldenLlamaConfig();
  c["num_hidden_layers"] = "three";
  ExpectBadInput(WriteModel("type", c, LlamaTensors(3)), "'num_hidden_layers' must be an integer");
}

TEST(ModelLoad, NotAModel) {
  const fs::path dir = MakeTempDir("notmodel");
  std::ofstream(dir / "x.bin") << "hello";
  ExpectBadInput(dir / "x.bin", "not a model directory or a GGUF file");
  ExpectBadInput(dir / "absent", "no such file or directory");
  ExpectBadInput(dir, "config.json");
}

TEST(ModelLoad, V4RopeKeysAreRead) {
  Json c = GoldenLlamaConfig();
  c.erase("rope_parameters");
  c["rope_theta"] = 500000.0;
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  auto cfg = ConfigFromHfJson((WriteModel("v4", c, {}) / "config.json").string());
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->rope.type, RopeType::kLinear);
  EXPECT_EQ(cfg->rope.theta, 500000.0);
  EXPECT_EQ(cfg->rope.factor, 2.0);
}

// llama.cpp's permute (convert_hf_to_gguf.py): w.reshape(n_head, 2, hd/2, cols).swapaxes(1, 2).
TEST(ModelWeights, UnpermuteInvertsLlamaCppPermute) {
  const int n_head = 3, hd = 8, cols = 5;
  std::vector<float> hf(n_head * hd * cols);
  for (size_t i = 0; i < hf.size(); ++i) hf[i] = static_cast<float>(i);
  std::vector<float> gguf(hf.size());
  for (int h = 0; h < n_head; ++h)
    for (int t = 0; t < 2; ++t)
      for (int j = 0; j < hd / 2; ++j)
        for (int c = 0; c < cols; ++c)
          gguf[((h * hd) + j * 2 + t) * cols + c] = hf[((h * hd) + t * (hd / 2) + j) * cols + c];
  UnpermuteGgufQk(gguf.data(), n_head, hd, cols);
  EXPECT_EQ(gguf, hf);
}

}  // namespace
}  // namespace kvaudit
