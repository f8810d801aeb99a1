// llama.cpp goldens of dense architectures beyond transformers' five (../shared/golden/llamacpp,
// its README): a tiny random-weight GGUF and llama.cpp's own logits for 96 positions (CPU, f32 KV
// cache, flash attention off) and greedy continuation. Checked: every position's logits within
// 1e-4 and the same argmax; the greedy continuation through the incremental decode path; prefill
// and token-by-token decode bitwise equal; 1 and 2 threads bitwise equal; and the same weights
// written as a Hugging Face directory (config.json + safetensors, the architecture's own names)
// give bitwise the logits of the GGUF.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"
#include "support/gguf_as_hf.h"
#include "support/llamacpp_golden.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using ::kvaudit::testing::Fixture;

constexpr int kPositions = 96;

using testing::LlamaCppGolden;

// Gemma's GGUF tensors under transformers' names (convert_hf_to_gguf.py Gemma2Model / Gemma3Model
// map them one to one and store every norm as 1 + w: here w = stored - 1, exact for norms in
// [0.5, 2]), with a config.json equal to the GGUF's metadata (golden/llamacpp/<name>/meta.json).
// v5_rope: Gemma 3's two RoPEs as transformers v5 writes them (rope_parameters per layer type).
fs::path WriteGemmaAsHf(const std::string& name, const fs::path& dir, bool v5_rope = false) {
  auto gguf = GgufFile::Open(Fixture("golden/llamacpp/" + name + "/model.gguf").string());
  KV_CHECK_MSG(gguf.ok(), gguf.ok() ? "" : gguf.error().message.c_str());
  const bool g3 = name == "gemma3";
  std::map<std::string, std::string> layer_names = {{"attn_norm", "input_layernorm"},
                                                    {"attn_q", "self_attn.q_proj"},
                                                    {"attn_k", "self_attn.k_proj"},
                                                    {"attn_v", "self_attn.v_proj"},
                                                    {"attn_output", "self_attn.o_proj"},
                                                    {"post_attention_norm", "post_attention_layernorm"},
                                                    {"ffn_norm", "pre_feedforward_layernorm"},
                                                    {"post_ffw_norm", "post_feedforward_layernorm"},
                                                    {"ffn_gate", "mlp.gate_proj"},
                                                    {"ffn_up", "mlp.up_proj"},
                                                    {"ffn_down", "mlp.down_proj"}};
  if (g3) layer_names.insert({{"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"}});
  std::vector<testing::F32Tensor> tensors;
  auto add = [&](const std::string& gguf_name, const std::string& hf_name) {
    tensors.push_back(testing::GgufAsHf(*gguf, gguf_name, hf_name, gguf_name.find("norm") != std::string::npos));
  };
  add("token_embd.weight", "model.embed_tokens.weight");
  add("output_norm.weight", "model.norm.weight");
  const int n_layers = g3 ? 6 : 3;
  for (int i = 0; i < n_layers; ++i) {
    for (const auto& [g, h] : layer_names)
      add("blk." + std::to_string(i) + "." + g + ".weight", "model.layers." + std::to_string(i) + "." + h + ".weight");
  }
  fs::create_directories(dir);
  testing::WriteF32Safetensors(dir / "model.safetensors", tensors);
  const std::string common = R"("hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "vocab_size": 256, "max_position_embeddings": 8192, "rms_norm_eps": 1e-06, "query_pre_attn_scalar": 16,
    "sliding_window": 8, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true,)";
  if (g3) {
    std::ofstream(dir / "config.json")
        << R"({"model_type": "gemma3_text", "num_hidden_layers": 6, "intermediate_size": 96,)" << common
        << (v5_rope ? R"( "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0,
      "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},)"
                    : R"( "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0},)")
        << R"( "sliding_window_pattern": 6,
      "attn_logit_softcapping": null, "final_logit_softcapping": null})";
  } else {
    std::ofstream(dir / "config.json")
        << R"({"model_type": "gemma2", "num_hidden_layers": 3, "intermediate_size": 128,)" << common
        << R"( "rope_theta": 10000.0, "attn_logit_softcapping": 2.0,
      "final_logit_softcapping": 2.5})";
  }
  return dir;
}

class LlamaCppDenseGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppDenseGolden, MatchesLlamaCpp) {
  const fs::path dir = Fixture("golden/llamacpp/" + GetParam());
  const LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  ASSERT_EQ(g.ids.size(), static_cast<size_t>(kPositions));
  auto model = Model::Load((dir / "model.gguf").string());
  ASSERT_TRUE(model.ok()) << model.error().message;
  const Model& m = **model;
  const size_t V = m.config().vocab_size;
  ASSERT_EQ(g.logits.size(), kPositions * V);

  const std::vector<float> logits = testing::GoldenLogits(m, g.ids, 256, 2);
  double max_abs = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(logits[i]) - g.logits[i]));
  // Gemma: llama.cpp's CPU GELU reads an f16 table, kvaudit computes GELU(tanh) in f32 (the
  // goldens' README: exact GELU lands 1-2e-3 away), so its bound is 3e-3.
  const bool gemma = GetParam().rfind("gemma", 0) == 0;
  EXPECT_LE(max_abs, gemma ? 3e-3 : 1e-4);
  for (size_t t = 0; t < kPositions; ++t) {
    const auto row = [&](const std::vector<float>& x) { return x.begin() + static_cast<std::ptrdiff_t>(t * V); };
    EXPECT_EQ(std::max_element(row(logits), row(logits) + V) - row(logits),
              std::max_element(row(g.logits), row(g.logits) + V) - row(g.logits))
        << "position " << t;
  }
  std::printf("[llama.cpp golden %s] max|dlogit| %.3g\n", GetParam().c_str(), max_abs);

  EXPECT_EQ(testing::GoldenLogits(m, g.ids, 256, 1), logits) << "1 and 2 threads differ";
  EXPECT_EQ(testing::GoldenLogits(m, g.ids, 256, 2, /*decode=*/true), logits)
      << "prefill and token-by-token decode differ";
  EXPECT_EQ(testing::GoldenGreedy(m, g.prompt, g.greedy.size()), g.greedy);
}

INSTANTIATE_TEST_SUITE_P(Architectures, LlamaCppDenseGolden, ::testing::Values("phi3", "gemma2", "gemma3"));

// The Hugging Face layout of the same weights (fused qkv_proj and gate_up_proj) computes the very
// same bits as the GGUF.
TEST(LlamaCppDenseGoldenHf, Phi3SafetensorsAndGgufGiveTheSameBits) {
  const fs::path gguf = Fixture("golden/llamacpp/phi3/model.gguf");
  const fs::path hf = testing::WritePhi3AsHf(gguf, testing::MakeTempDir("phi3-hf"));
  auto from_gguf = Model::Load(gguf.string());
  auto from_hf = Model::Load(hf.string());
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.error().message;
  ASSERT_TRUE(from_hf.ok()) << from_hf.error().message;
  EXPECT_EQ((*from_hf)->config().arch, Arch::kPhi3);
  const LlamaCppGolden g = testing::ReadLlamaCppGolden("phi3");
  EXPECT_EQ(testing::GoldenLogits(**from_hf, g.ids, 256, 2), testing::GoldenLogits(**from_gguf, g.ids, 256, 2));
  fs::remove_all(hf);
}

class LlamaCppGemmaHf : public ::testing::TestWithParam<std::string> {};

// Gemma's Hugging Face layout (its own norm convention, pre/post feed-forward norms, config keys)
// computes the very same bits as the GGUF.
TEST_P(LlamaCppGemmaHf, SafetensorsAndGgufGiveTheSameBits) {
  const fs::path hf = WriteGemmaAsHf(GetParam(), testing::MakeTempDir(GetParam() + "-hf"));
  auto from_gguf = Model::Load(Fixture("golden/llamacpp/" + GetParam() + "/model.gguf").string());
  auto from_hf = Model::Load(hf.string());
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.error().message;
  ASSERT_TRUE(from_hf.ok()) << from_hf.error().message;
  const ModelConfig& a = (*from_gguf)->config();
  const ModelConfig& b = (*from_hf)->config();
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.sliding_layers, b.sliding_layers);
  EXPECT_EQ(a.attn_scale, b.attn_scale);
  EXPECT_EQ(a.attn_softcap, b.attn_softcap);
  EXPECT_EQ(a.final_softcap, b.final_softcap);
  const LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  EXPECT_EQ(testing::GoldenLogits(**from_hf, g.ids, 256, 2), testing::GoldenLogits(**from_gguf, g.ids, 256, 2));
  fs::remove_all(hf);
}

INSTANTIATE_TEST_SUITE_P(Architectures, LlamaCppGemmaHf, ::testing::Values("gemma2", "gemma3"));

// transformers v5's spelling of Gemma 3's RoPEs (one object per layer type) is the same model.
TEST(LlamaCppGemmaHfV5, Gemma3RopeParametersPerLayerTypeGiveTheSameBits) {
  const fs::path v4 = WriteGemmaAsHf("gemma3", testing::MakeTempDir("gemma3-hf-v4"));
  const fs::path v5 = WriteGemmaAsHf("gemma3", testing::MakeTempDir("gemma3-hf-v5"), /*v5_rope=*/true);
  auto a = Model::Load(v4.string());
  auto b = Model::Load(v5.string());
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_TRUE((*b)->config().rope_local.has_value());
  EXPECT_EQ((*b)->config().rope.type, RopeType::kLinear);
  EXPECT_EQ((*b)->config().rope_local->theta, 10000.0);
  const LlamaCppGolden g = testing::ReadLlamaCppGolden("gemma3");
  EXPECT_EQ(testing::GoldenLogits(**b, g.ids, 256, 2), testing::GoldenLogits(**a, g.ids, 256, 2));
  fs::remove_all(v4);
  fs::remove_all(v5);
}

}  // namespace
}  // namespace kvaudit
