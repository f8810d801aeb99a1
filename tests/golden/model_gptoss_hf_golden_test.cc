// gpt-oss as a Hugging Face checkpoint: the tiny llama.cpp goldens' GGUFs
// (../shared/golden/llamacpp/gpt-oss with f32 experts, gpt-oss-mxfp4 with MXFP4 experts) written as
// config.json + model.safetensors in transformers' layout (modeling_gpt_oss.py: experts stacked
// [in, out] with gate and up interleaved along the outputs, or MXFP4 blocks with HF's nibble order)
// compute bitwise the GGUF's logits at every position, and the sinks, the router bias and the
// experts' biases each change them.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/dequantize.h"
#include "io/gguf.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"
#include "support/gpt_oss_hf_config.h"
#include "support/llamacpp_golden.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::F32Tensor;
using testing::RawTensor;

// [n, vocab] logits of one prefill of ids.
std::vector<float> GptOssLogits(const Model& m, const std::vector<int32_t>& ids) {
  ThreadPool pool(2);
  auto cache = MakeF32Cache(m.config(), 256);
  Forward fwd(m, *cache, pool);
  std::vector<float> out(ids.size() * static_cast<size_t>(m.config().vocab_size));
  fwd.Run(ids, 0, out.data(), /*all_logits=*/true);
  return out;
}

bool GptOssSameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// GGUF tensor `name` as f32 under `hf_name`, in its stored (outermost-first) shape.
F32Tensor GptOssGgufF32(const GgufFile& g, const std::string& name, const std::string& hf_name) {
  const TensorView* t = g.FindTensor(name);
  KV_CHECK_MSG(t != nullptr, name.c_str());
  F32Tensor out{hf_name, t->shape, std::vector<float>(t->numel())};
  KV_CHECK(DequantizeToF32(*t, out.values.data()).ok());
  return out;
}

// HF's gate_up_proj [n, d, 2ff] (x @ W, gate = [..., ::2], up = [..., 1::2]) from the GGUF's
// gate and up [n, ff, d]; HF's down_proj [n, ff, d] from the GGUF's down [n, d, ff].
F32Tensor InterleavedGateUp(const F32Tensor& gate, const F32Tensor& up, const std::string& hf_name) {
  const int64_t n = gate.shape[0], ff = gate.shape[1], d = gate.shape[2];
  F32Tensor out{hf_name, {n, d, 2 * ff}, std::vector<float>(static_cast<size_t>(n * d * 2 * ff))};
  for (int64_t e = 0; e < n; ++e) {
    for (int64_t r = 0; r < ff; ++r) {
      for (int64_t i = 0; i < d; ++i) {
        out.values[(e * d + i) * 2 * ff + 2 * r] = gate.values[(e * ff + r) * d + i];
        out.values[(e * d + i) * 2 * ff + 2 * r + 1] = up.values[(e * ff + r) * d + i];
      }
    }
  }
  return out;
}

F32Tensor TransposedDown(const F32Tensor& down, const std::string& hf_name) {
  const int64_t n = down.shape[0], d = down.shape[1], ff = down.shape[2];
  F32Tensor out{hf_name, {n, ff, d}, std::vector<float>(down.values.size())};
  for (int64_t e = 0; e < n; ++e) {
    for (int64_t o = 0; o < d; ++o) {
      for (int64_t j = 0; j < ff; ++j) out.values[(e * ff + j) * d + o] = down.values[(e * d + o) * ff + j];
    }
  }
  return out;
}

// gate_up_proj_bias [n, 2ff] from the GGUF's gate and up biases [n, ff]: interleaved.
F32Tensor InterleavedBias(const F32Tensor& gate, const F32Tensor& up, const std::string& hf_name) {
  const int64_t n = gate.shape[0], ff = gate.shape[1];
  F32Tensor out{hf_name, {n, 2 * ff}, std::vector<float>(static_cast<size_t>(n * 2 * ff))};
  for (int64_t k = 0; k < n * ff; ++k) {
    out.values[2 * k] = gate.values[k];
    out.values[2 * k + 1] = up.values[k];
  }
  return out;
}

// The GGUF's MXFP4 rows [n][rows] of 17-byte ggml blocks (E8M0 byte, then byte j = element j |
// element j+16 << 4) as HF's _blocks [n, rows, groups, 16] (byte k = element 2k | element 2k+1 << 4)
// and _scales [n, rows, groups]; `row(e, r)` is the GGUF row of expert e's HF row r.
void HfMxfp4(const TensorView& t, int64_t hf_rows, const std::function<const uint8_t*(int64_t, int64_t)>& row,
             const std::string& hf_name, std::vector<RawTensor>& out) {
  const int64_t n = t.shape[0], groups = t.shape[2] / 32;
  RawTensor blocks{hf_name + "_blocks", "U8", {n, hf_rows, groups, 16}, {}};
  RawTensor scales{hf_name + "_scales", "U8", {n, hf_rows, groups}, {}};
  for (int64_t e = 0; e < n; ++e) {
    for (int64_t r = 0; r < hf_rows; ++r) {
      const uint8_t* src = row(e, r);
      for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* b = src + g * 17;
        auto code = [b](int k) { return k < 16 ? b[1 + k] & 0x0F : b[1 + k - 16] >> 4; };
        scales.bytes.push_back(b[0]);
        for (int k = 0; k < 16; ++k) blocks.bytes.push_back(static_cast<uint8_t>(code(2 * k) | code(2 * k + 1) << 4));
      }
    }
  }
  out.push_back(std::move(blocks));
  out.push_back(std::move(scales));
}

// One layer's experts under transformers' names: dequantized (f32) or MXFP4 as published.
void AddGptOssExperts(const GgufFile& g, int i, std::vector<F32Tensor>& f32, std::vector<RawTensor>& raw) {
  const std::string b = "blk." + std::to_string(i) + ".", p = "model.layers." + std::to_string(i) + ".mlp.experts.";
  f32.push_back(InterleavedBias(GptOssGgufF32(g, b + "ffn_gate_exps.bias", ""),
                                GptOssGgufF32(g, b + "ffn_up_exps.bias", ""), p + "gate_up_proj_bias"));
  f32.push_back(GptOssGgufF32(g, b + "ffn_down_exps.bias", p + "down_proj_bias"));
  const TensorView* gate = g.FindTensor(b + "ffn_gate_exps.weight");
  const TensorView* up = g.FindTensor(b + "ffn_up_exps.weight");
  const TensorView* down = g.FindTensor(b + "ffn_down_exps.weight");
  KV_CHECK(gate && up && down);
  if (gate->dtype != DType::kMXFP4) {
    f32.push_back(
        InterleavedGateUp(GptOssGgufF32(g, gate->name, ""), GptOssGgufF32(g, up->name, ""), p + "gate_up_proj"));
    f32.push_back(TransposedDown(GptOssGgufF32(g, down->name, ""), p + "down_proj"));
    return;
  }
  KV_CHECK(up->dtype == DType::kMXFP4 && down->dtype == DType::kMXFP4);
  const int64_t ff = gate->shape[1], d = gate->shape[2];
  const size_t gate_row = static_cast<size_t>(d / 32) * 17, down_row = static_cast<size_t>(ff / 32) * 17;
  HfMxfp4(
      *gate, 2 * ff, [&](int64_t e, int64_t r) { return (r % 2 == 0 ? gate : up)->data + (e * ff + r / 2) * gate_row; },
      p + "gate_up_proj", raw);
  HfMxfp4(
      *down, d, [&](int64_t e, int64_t r) { return down->data + (e * d + r) * down_row; }, p + "down_proj", raw);
}

// config.json of the goldens' model (their meta.json), in transformers' keys. YaRN's truncate is
// true (transformers' default): rounded correction dims, what llama.cpp computes for the GGUF.
nlohmann::json GptOssHfConfig(const ModelConfig& c) {
  nlohmann::json j = testing::TinyGptOssHfConfig(/*truncate=*/true);
  KV_CHECK(j["hidden_size"] == c.d_model && j["num_hidden_layers"] == c.n_layers &&
           j["num_local_experts"] == c.n_experts && j["intermediate_size"] == c.expert_ff &&
           j["sliding_window"] == c.sliding_window);
  return j;
}

// The golden's GGUF written as a Hugging Face directory; `edit` may change the f32 tensors (by
// HF name) before they are written.
fs::path WriteGptOssAsHf(const std::string& golden, const ModelConfig& c,
                         const std::function<void(std::vector<F32Tensor>&)>& edit = {}) {
  auto g = GgufFile::Open(testing::Fixture("golden/llamacpp/" + golden + "/model.gguf").string());
  KV_CHECK_MSG(g.ok(), g.ok() ? "" : g.error().message.c_str());
  std::vector<F32Tensor> f32;
  std::vector<RawTensor> raw;
  auto add = [&](const std::string& gguf, const std::string& hf) { f32.push_back(GptOssGgufF32(*g, gguf, hf)); };
  add("token_embd.weight", "model.embed_tokens.weight");
  add("output_norm.weight", "model.norm.weight");
  add("output.weight", "lm_head.weight");
  const std::vector<std::pair<std::string, std::string>> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_sinks.weight", "self_attn.sinks"},
      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate_inp.weight", "mlp.router.weight"},
      {"ffn_gate_inp.bias", "mlp.router.bias"}};
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".", p = "model.layers." + std::to_string(i) + ".";
    for (const auto& [gguf, hf] : layer) add(b + gguf, p + hf);
    for (const char* proj : {"q", "k", "v", "output"}) {
      const std::string hf = p + "self_attn." + (std::string(proj) == "output" ? "o" : proj) + "_proj.";
      add(b + "attn_" + proj + ".weight", hf + "weight");
      add(b + "attn_" + proj + ".bias", hf + "bias");
    }
    AddGptOssExperts(*g, i, f32, raw);
  }
  if (edit) edit(f32);
  const fs::path dir = testing::MakeTempDir(golden + "-hf");
  testing::WriteSafetensors(dir / "model.safetensors", f32, raw);
  std::ofstream(dir / "config.json") << GptOssHfConfig(c).dump(2);
  return dir;
}

class GptOssHfGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(GptOssHfGolden, SafetensorsAndGgufGiveTheSameBits) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  auto gguf = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  const fs::path dir = WriteGptOssAsHf(GetParam(), (*gguf)->config());
  auto hf = Model::Load(dir.string());
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  const ModelConfig& a = (*gguf)->config();
  const ModelConfig& b = (*hf)->config();
  EXPECT_EQ(b.arch, Arch::kGptOss);
  EXPECT_EQ(a.sliding_layers, b.sliding_layers);
  EXPECT_EQ(a.attn_sinks, b.attn_sinks);
  EXPECT_EQ(RopeInvFreq(a.rope, a.head_dim), RopeInvFreq(b.rope, b.head_dim));
  EXPECT_EQ(a.rope.attn_factor, b.rope.attn_factor);
  EXPECT_EQ((*hf)->weights().n_params, (*gguf)->weights().n_params);
  EXPECT_EQ((*hf)->weights().storage_summary(), (*gguf)->weights().storage_summary());
  const std::vector<float> want = GptOssLogits(**gguf, g.ids);
  const std::vector<float> got = GptOssLogits(**hf, g.ids);
  ASSERT_EQ(got.size(), want.size());
  const size_t V = a.vocab_size;
  for (size_t t = 0; t < g.ids.size(); ++t) {
    EXPECT_EQ(std::memcmp(got.data() + t * V, want.data() + t * V, V * sizeof(float)), 0) << "position " << t;
  }
  fs::remove_all(dir);
}

// Each of the tensors only gpt-oss has changes the logits: a copy with one of them perturbed is
// no longer the GGUF's model (so the bitwise match above is not blind to them). And the published
// config's truncate=false (fractional YaRN dims, transformers' arithmetic) is another model than
// llama.cpp's rounded one.
TEST_P(GptOssHfGolden, SinksRouterAndExpertBiasesAndTruncateMatter) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(GetParam());
  auto gguf = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  const ModelConfig& c = (*gguf)->config();
  const std::vector<float> want = GptOssLogits(**gguf, g.ids);
  for (const char* suffix :
       {"self_attn.sinks", "mlp.router.bias", "mlp.experts.gate_up_proj_bias", "mlp.experts.down_proj_bias"}) {
    const fs::path dir = WriteGptOssAsHf(GetParam(), c, [&](std::vector<F32Tensor>& ts) {
      for (F32Tensor& t : ts) {
        if (t.name == std::string("model.layers.1.") + suffix) t.values[1] += 0.5f;
      }
    });
    auto hf = Model::Load(dir.string());
    ASSERT_TRUE(hf.ok()) << hf.error().message;
    EXPECT_FALSE(GptOssSameBits(GptOssLogits(**hf, g.ids), want)) << suffix << " did not change the logits";
    fs::remove_all(dir);
  }
  const fs::path dir = WriteGptOssAsHf(GetParam(), c);
  nlohmann::json j = GptOssHfConfig(c);
  j["rope_scaling"]["truncate"] = false;
  std::ofstream(dir / "config.json") << j.dump(2);
  auto hf = Model::Load(dir.string());
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  EXPECT_FALSE(hf->get()->config().rope.yarn_round_dims);
  EXPECT_FALSE(GptOssSameBits(GptOssLogits(**hf, g.ids), want)) << "truncate=false did not change the logits";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Goldens, GptOssHfGolden, ::testing::Values("gpt-oss", "gpt-oss-mxfp4"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param == "gpt-oss" ? std::string("F32Experts") : std::string("Mxfp4Experts");
                         });

}  // namespace
}  // namespace kvaudit
