// Mixture-of-experts loading from tiny hand-built files: a well-formed qwen3moe GGUF loads (every
// expert counted, `info` shows the experts) and runs, its experts kept packed when MXFP4; each bad
// file or config is one BadInput line (exit 2) naming the key or tensor at fault.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "kv/f32_cache.h"
#include "quant/quant_type.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"
#include "support/tiny_llama.h"
#include "unit/io_builders.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::GgufBuilder;
using testing::MakeTempDir;

constexpr uint32_t kGgmlF32 = 0;
// The tiny model: 1 layer, d 8, 2 heads of 4 (1 KV head), 4 experts of width 8, 2 used, vocab 16.
constexpr int kD = 8, kHeads = 2, kKvHeads = 1, kHd = 4, kExperts = 4, kUsed = 2, kExpertFf = 8, kVocab = 16;

struct TinyMoe {
  int used = kUsed;
  std::set<std::string> drop;  // tensors left out
  std::function<void(GgufBuilder&)> extra;
  int up_experts = kExperts;  // rows of ffn_up_exps' outermost dimension
  // MXFP4 expert tensors (quantize_row_mxfp4_ref of the f32 values): rows of whole 32-element
  // blocks need d and the expert width at 32.
  bool mxfp4_experts = false;
  int d = kD, expert_ff = kExpertFf;
};

// Small non-zero values so the forward pass has something to route.
std::vector<float> ValuesF32(uint64_t n) {
  std::vector<float> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = 0.01f * static_cast<float>((i * 7 + 3) % 11) - 0.05f;
  return v;
}
testing::Bytes Values(uint64_t n) { return testing::PodBytes(ValuesF32(n)); }

constexpr uint32_t kGgmlMxfp4 = 39;
// The same values as MXFP4 blocks (n a multiple of 32).
testing::Bytes Mxfp4Values(uint64_t n) {
  const std::vector<float> v = ValuesF32(n);
  const QuantTraits& t = GetQuantTraits(QuantType::kMXFP4);
  testing::Bytes b(n / t.block_elems * t.block_bytes);  // [n / 32 blocks of 17 bytes]
  t.quantize_ref(v.data(), b.data(), static_cast<int64_t>(n));
  return b;
}

fs::path WriteTinyQwen3Moe(const TinyMoe& m) {
  const uint64_t d = static_cast<uint64_t>(m.d), ff = static_cast<uint64_t>(m.expert_ff);
  GgufBuilder b;
  b.Str("general.architecture", "qwen3moe")
      .U32("qwen3moe.block_count", 1)
      .U32("qwen3moe.embedding_length", static_cast<uint32_t>(m.d));
  b.U32("qwen3moe.attention.head_count", kHeads).U32("qwen3moe.attention.head_count_kv", kKvHeads);
  b.U32("qwen3moe.attention.key_length", kHd).U32("qwen3moe.feed_forward_length", 16);
  b.U32("qwen3moe.context_length", 64).F32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6f);
  b.U32("qwen3moe.expert_count", kExperts)
      .U32("qwen3moe.expert_feed_forward_length", static_cast<uint32_t>(m.expert_ff));
  if (m.used >= 0) b.U32("qwen3moe.expert_used_count", static_cast<uint32_t>(m.used));
  auto add = [&](const std::string& name, std::vector<uint64_t> ne) {
    uint64_t n = 1;
    for (uint64_t x : ne) n *= x;
    if (m.drop.count(name)) return;
    if (m.mxfp4_experts && name.find("_exps.") != std::string::npos) {
      b.AddTensor(name, ne, kGgmlMxfp4, Mxfp4Values(n));
    } else {
      b.AddTensor(name, ne, kGgmlF32, Values(n));
    }
  };
  add("token_embd.weight", {d, kVocab});
  add("output_norm.weight", {d});
  add("blk.0.attn_norm.weight", {d});
  add("blk.0.attn_q.weight", {d, kHeads * kHd});
  add("blk.0.attn_k.weight", {d, kKvHeads * kHd});
  add("blk.0.attn_v.weight", {d, kKvHeads * kHd});
  add("blk.0.attn_output.weight", {kHeads * kHd, d});
  add("blk.0.attn_q_norm.weight", {kHd});
  add("blk.0.attn_k_norm.weight", {kHd});
  add("blk.0.ffn_norm.weight", {d});
  add("blk.0.ffn_gate_inp.weight", {d, kExperts});
  add("blk.0.ffn_gate_exps.weight", {d, ff, kExperts});
  add("blk.0.ffn_up_exps.weight", {d, ff, static_cast<uint64_t>(m.up_experts)});
  add("blk.0.ffn_down_exps.weight", {ff, d, kExperts});
  if (m.extra) m.extra(b);
  return testing::WriteBytes(MakeTempDir("moe-gguf") / "tiny.gguf", b.Build());
}

// The tiny model with one change.
fs::path WriteTinyQwen3MoeWith(const std::function<void(TinyMoe&)>& change) {
  TinyMoe m;
  change(m);
  return WriteTinyQwen3Moe(m);
}

void ExpectBadInput(const fs::path& path, const std::string& needle) {
  auto model = Model::Load(path.string());
  ASSERT_FALSE(model.ok()) << "loaded a bad model: " << path;
  EXPECT_EQ(model.error().exit_code(), 2);
  EXPECT_NE(model.error().message.find(needle), std::string::npos) << model.error().message;
  EXPECT_NE(model.error().message.find("; hint: "), std::string::npos) << model.error().message;
  EXPECT_EQ(model.error().message.find('\n'), std::string::npos) << "one line please";
}

TEST(ModelMoeLoad, TinyQwen3MoeGgufLoadsCountsEveryExpertAndRuns) {
  auto model = Model::Load(WriteTinyQwen3Moe({}).string());
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.arch, Arch::kQwen3Moe);
  EXPECT_EQ(c.n_experts, kExperts);
  EXPECT_EQ(c.n_experts_used, kUsed);
  EXPECT_EQ(c.expert_ff, kExpertFf);
  EXPECT_TRUE(c.norm_topk);  // llama.cpp's qwen3moe graph always renormalises
  EXPECT_TRUE(c.qk_norm);
  const int64_t attn = kD * (kHeads * kHd) * 2 + kD * kKvHeads * kHd * 2 + 2 * kHd + 2 * kD;
  const int64_t moe = kD * kExperts + 3LL * kExperts * kExpertFf * kD;
  EXPECT_EQ((*model)->weights().n_params, kVocab * kD + kD + attn + moe);
  const std::string info = (*model)->Describe();
  EXPECT_NE(info.find("experts: 4  used per token: 2  expert ffn: 8"), std::string::npos) << info;

  ThreadPool pool(2);
  auto cache = MakeF32Cache(c, 64);
  Forward fwd(**model, *cache, pool);
  std::vector<int32_t> seen;
  fwd.set_route_observer([&](int, int, int n, const int32_t* e, const float* w) {
    for (int t = 0; t < n; ++t) {
      EXPECT_NE(e[t * kUsed], e[t * kUsed + 1]);
      EXPECT_NEAR(w[t * kUsed] + w[t * kUsed + 1], 1.0f, 1e-6f);
      EXPECT_GE(w[t * kUsed], w[t * kUsed + 1]);  // best first
    }
    seen.insert(seen.end(), e, e + n * kUsed);
  });
  std::vector<int32_t> ids = {1, 5, 9};
  std::vector<float> logits(ids.size() * kVocab);
  fwd.Run(ids, 0, logits.data(), true);
  EXPECT_EQ(seen.size(), ids.size() * kUsed);
}

// MXFP4 expert tensors stay packed in the mapping (each expert a view of its slice) and compute
// bitwise as if dequantized at load (WeightLoadOptions::dequantize_at_load, the reference), in a
// prefill, token by token and on 1 or 2 threads.
TEST(ModelMoeLoad, Mxfp4ExpertsKeptPackedComputeAsDequantizedAtLoad) {
  TinyMoe m;
  m.mxfp4_experts = true;
  m.d = 32;
  m.expert_ff = 32;
  const fs::path path = WriteTinyQwen3Moe(m);
  auto packed = Model::Load(path.string());
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  auto converted = Model::Load(path.string(), {.dequantize_at_load = true});
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  const ModelWeights& pw = (*packed)->weights();
  EXPECT_EQ(pw.storage_summary(), "f32+mxfp4");
  EXPECT_EQ((*converted)->weights().storage_summary(), "f32");
  EXPECT_FALSE(pw.mappings.empty());
  EXPECT_EQ(pw.source_dtypes.at("MXFP4"), 3 * kExperts * 32 * 32);
  const LayerWeights& l0 = pw.layers[0];
  ASSERT_EQ(l0.experts.size(), static_cast<size_t>(kExperts));
  EXPECT_EQ(l0.experts[1].down.bytes(), 32u * 32 / 32 * 17);  // the file's bytes, one expert's slice
  EXPECT_EQ(l0.experts[1].down.parts()[0].type, QuantType::kMXFP4);

  const ModelConfig& c = (*packed)->config();
  const std::vector<int32_t> ids = {1, 5, 9, 3, 14, 0, 7};
  const int n = static_cast<int>(ids.size());
  auto logits = [&](const Model& model, int threads, bool decode) {
    ThreadPool pool(threads);
    auto cache = MakeF32Cache(c, 64);
    Forward fwd(model, *cache, pool);
    std::vector<float> out(static_cast<size_t>(n) * kVocab);  // [n, vocab]
    if (!decode) {
      fwd.Run(ids, 0, out.data(), true);
    } else {
      for (int t = 0; t < n; ++t) fwd.Run(std::span<const int32_t>(&ids[t], 1), t, out.data() + t * kVocab, false);
    }
    return out;
  };
  const std::vector<float> want = logits(**converted, 2, false);
  for (float v : want) ASSERT_TRUE(std::isfinite(v));
  for (const auto& [threads, decode] : {std::pair{2, false}, std::pair{1, false}, std::pair{2, true}}) {
    const std::vector<float> got = logits(**packed, threads, decode);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << threads << " threads, " << (decode ? "decode" : "prefill");
  }
}

TEST(ModelMoeLoad, MoreExpertsUsedThanExistIsRefused) {
  ExpectBadInput(WriteTinyQwen3MoeWith([](TinyMoe& m) { m.used = 5; }), "experts used per token 5 must be in [1, 4]");
}

TEST(ModelMoeLoad, MissingExpertUsedCountIsNamed) {
  ExpectBadInput(WriteTinyQwen3MoeWith([](TinyMoe& m) { m.used = -1; }), "missing key 'qwen3moe.expert_used_count'");
}

TEST(ModelMoeLoad, MissingExpertTensorIsNamed) {
  ExpectBadInput(WriteTinyQwen3MoeWith([](TinyMoe& m) { m.drop = {"blk.0.ffn_down_exps.weight"}; }),
                 "missing tensor 'blk.0.ffn_down_exps.weight'");
  ExpectBadInput(WriteTinyQwen3MoeWith([](TinyMoe& m) { m.drop = {"blk.0.ffn_gate_inp.weight"}; }),
                 "missing tensor 'blk.0.ffn_gate_inp.weight'");
}

TEST(ModelMoeLoad, WrongExpertTensorShapeIsNamed) {
  ExpectBadInput(WriteTinyQwen3MoeWith([](TinyMoe& m) { m.up_experts = 3; }),
                 "tensor 'blk.0.ffn_up_exps.weight' has shape [3, 8, 8]");
}

TEST(ModelMoeLoad, SharedExpertTensorIsRefusedNotIgnored) {
  TinyMoe m;
  m.extra = [](GgufBuilder& b) { b.AddTensor("blk.0.ffn_gate_inp_shexp.weight", {kD}, kGgmlF32, Values(kD)); };
  ExpectBadInput(WriteTinyQwen3Moe(m), "tensor 'blk.0.ffn_gate_inp_shexp.weight'");
}

TEST(ModelMoeLoad, UnsupportedMoeKeysAreRefused) {
  TinyMoe shared;
  shared.extra = [](GgufBuilder& b) { b.U32("qwen3moe.expert_shared_count", 1); };
  ExpectBadInput(WriteTinyQwen3Moe(shared), "key 'qwen3moe.expert_shared_count' = 1");
  TinyMoe no_norm;
  no_norm.extra = [](GgufBuilder& b) { b.Bool("qwen3moe.expert_weights_norm", false); };
  ExpectBadInput(WriteTinyQwen3Moe(no_norm), "key 'qwen3moe.expert_weights_norm' is false");
  TinyMoe sigmoid;
  sigmoid.extra = [](GgufBuilder& b) { b.U32("qwen3moe.expert_gating_func", 2); };
  ExpectBadInput(WriteTinyQwen3Moe(sigmoid), "key 'qwen3moe.expert_gating_func' = 2");
}

// ---------------------------------------------------------------- Hugging Face config.json

nlohmann::json TinyHfConfig(const std::string& type) {
  nlohmann::json j = {{"model_type", type},
                      {"hidden_size", kD},
                      {"num_hidden_layers", 1},
                      {"num_attention_heads", kHeads},
                      {"num_key_value_heads", kKvHeads},
                      {"head_dim", kHd},
                      {"intermediate_size", kExpertFf},
                      {"vocab_size", kVocab},
                      {"num_experts_per_tok", kUsed}};
  if (type == "mixtral") {
    j["num_local_experts"] = kExperts;
  } else {
    j["num_experts"] = kExperts;
    j["moe_intermediate_size"] = kExpertFf;
  }
  return j;
}

fs::path WriteConfigDir(const nlohmann::json& config) {
  const fs::path dir = MakeTempDir("moe-hf");
  std::ofstream(dir / "config.json") << config.dump();
  return dir;
}

void ExpectConfigRefused(const nlohmann::json& config, const std::string& needle) {
  auto c = LoadModelConfig(WriteConfigDir(config).string());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().exit_code(), 2);
  EXPECT_NE(c.error().message.find(needle), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.find('\n'), std::string::npos);
}

TEST(ModelMoeLoad, HfConfigsReadTheirExpertKeys) {
  auto q = LoadModelConfig(WriteConfigDir(TinyHfConfig("qwen3_moe")).string());
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->arch, Arch::kQwen3Moe);
  EXPECT_EQ(q->n_experts, kExperts);
  EXPECT_FALSE(q->norm_topk);  // transformers' Qwen3MoeConfig default
  EXPECT_TRUE(q->qk_norm);
  auto m = LoadModelConfig(WriteConfigDir(TinyHfConfig("mixtral")).string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->arch, Arch::kMixtral);
  EXPECT_EQ(m->expert_ff, kExpertFf);  // Mixtral's intermediate_size is the expert width
  EXPECT_TRUE(m->norm_topk);
}

TEST(ModelMoeLoad, HfConfigsWithDenseLayersOrBadCountsAreRefused) {
  nlohmann::json dense = TinyHfConfig("qwen3_moe");
  dense["mlp_only_layers"] = {0};
  ExpectConfigRefused(dense, "mlp_only_layers [0] makes some layers dense");
  nlohmann::json step = TinyHfConfig("qwen3_moe");
  step["decoder_sparse_step"] = 2;
  ExpectConfigRefused(step, "decoder_sparse_step 2");
  nlohmann::json too_many = TinyHfConfig("mixtral");
  too_many["num_experts_per_tok"] = 8;
  ExpectConfigRefused(too_many, "experts used per token 8 must be in [1, 4]");
  nlohmann::json missing = TinyHfConfig("mixtral");
  missing.erase("num_local_experts");
  ExpectConfigRefused(missing, "missing key 'num_local_experts'");
}

TEST(ModelMoeLoad, HfMissingExpertTensorIsNamed) {
  const fs::path dir = WriteConfigDir(TinyHfConfig("mixtral"));
  std::vector<testing::F32Tensor> t = {{"model.embed_tokens.weight", {kVocab, kD}, {}},
                                       {"model.norm.weight", {kD}, {}},
                                       {"model.layers.0.input_layernorm.weight", {kD}, {}},
                                       {"model.layers.0.self_attn.q_proj.weight", {kHeads * kHd, kD}, {}},
                                       {"model.layers.0.self_attn.k_proj.weight", {kKvHeads * kHd, kD}, {}},
                                       {"model.layers.0.self_attn.v_proj.weight", {kKvHeads * kHd, kD}, {}},
                                       {"model.layers.0.self_attn.o_proj.weight", {kD, kHeads * kHd}, {}},
                                       {"model.layers.0.post_attention_layernorm.weight", {kD}, {}},
                                       {"model.layers.0.block_sparse_moe.gate.weight", {kExperts, kD}, {}}};
  testing::WriteF32Safetensors(dir / "model.safetensors", t);
  ExpectBadInput(dir, "missing tensor 'model.layers.0.block_sparse_moe.experts.0.w1.weight'");
}

}  // namespace
}  // namespace kvaudit
