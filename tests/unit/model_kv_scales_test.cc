// A quantized checkpoint's k_scale/v_scale tensors (model/kv_scales.h): read under each naming
// scheme vLLM's loader maps, per tensor and per KV head; a partial or malformed set is one line and
// exit 2; scale=ckpt quantizes with them (the stores' codec scale) and is refused without them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kv/config/cache_config.h"
#include "kv/store/row_store.h"
#include "model/model.h"
#include "support/fixtures.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

using testing::F32Tensor;

testing::TinyLlamaShape Shape() {
  testing::TinyLlamaShape s;
  s.layers = 2, s.hidden = 64, s.heads = 2, s.kv_heads = 2, s.head_dim = 32, s.ffn = 64, s.vocab = 64, s.ctx = 64;
  return s;
}

// Layer l's K scale 0.5 + l, V scale 0.25 + l (per KV head h: + h / 8), under names k_name/v_name
// below model.layers.l.self_attn. (v_name empty: one tensor for both).
std::vector<F32Tensor> Scales(const std::string& k_name, const std::string& v_name, int per_layer) {
  std::vector<F32Tensor> out;
  for (int l = 0; l < 2; ++l) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".self_attn.";
    auto values = [&](float base) {
      std::vector<float> v;
      for (int h = 0; h < per_layer; ++h) v.push_back(base + static_cast<float>(l) + static_cast<float>(h) / 8);
      return v;
    };
    const std::vector<int64_t> shape = per_layer == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{per_layer};
    out.push_back({prefix + k_name, shape, values(0.5f)});
    if (!v_name.empty()) out.push_back({prefix + v_name, shape, values(0.25f)});
  }
  return out;
}

Expected<std::unique_ptr<Model>> LoadWith(const std::string& tag, const std::vector<F32Tensor>& extra) {
  const auto dir = testing::MakeTempDir(tag);
  testing::WriteTinyLlama(dir, Shape(), {}, extra);
  return Model::Load(dir.string());
}

TEST(ModelKvScales, EachNamingSchemePerTensorAndPerHead) {
  struct Case {
    std::string k, v, source;
  };
  for (const Case& c :
       {Case{"k_scale", "v_scale", "model.layers.N.self_attn.k_scale / v_scale"},
        Case{"k_proj.k_scale", "v_proj.v_scale", "model.layers.N.self_attn.k_proj.k_scale / v_proj.v_scale"},
        Case{"kv_scale", "", "model.layers.N.self_attn.kv_scale"}}) {
    auto m = LoadWith("kvscales", Scales(c.k, c.v, 1));
    ASSERT_TRUE(m.ok()) << m.error().message;
    const CheckpointKvScales& s = (*m)->config().kv_scales;
    EXPECT_EQ(s.per_layer, 1);
    EXPECT_EQ(s.source, c.source);
    EXPECT_EQ(s.k, (std::vector<float>{0.5f, 1.5f}));
    // The deprecated kv_scale is vLLM's k_scale and v_scale alike.
    EXPECT_EQ(s.v, c.v.empty() ? s.k : (std::vector<float>{0.25f, 1.25f}));
    EXPECT_EQ(s.K(1, 1), 1.5f);
  }
  auto heads = LoadWith("kvscales-heads", Scales("k_scale", "v_scale", 2));
  ASSERT_TRUE(heads.ok()) << heads.error().message;
  const CheckpointKvScales& s = (*heads)->config().kv_scales;
  EXPECT_EQ(s.per_layer, 2);
  EXPECT_EQ(s.K(1, 1), 1.625f);
  EXPECT_EQ(s.V(0, 1), 0.375f);
  auto none = LoadWith("kvscales-none", {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)->config().kv_scales.empty());
}

TEST(ModelKvScales, APartialOrMalformedSetIsOneLine) {
  struct Case {
    std::vector<F32Tensor> tensors;
    std::string needle;
  };
  std::vector<F32Tensor> partial = Scales("k_scale", "v_scale", 1);
  partial.pop_back();  // layer 1's v_scale
  std::vector<F32Tensor> first_missing = Scales("k_scale", "v_scale", 1);
  first_missing.erase(first_missing.begin(), first_missing.begin() + 2);  // layer 0's k_scale and v_scale
  std::vector<F32Tensor> negative = Scales("k_scale", "v_scale", 1);
  negative[2].values = {-1.0f};
  std::vector<F32Tensor> shape = Scales("k_scale", "v_scale", 1);
  shape[0] = {shape[0].name, {3}, {1, 1, 1}};
  std::vector<F32Tensor> mixed = Scales("k_scale", "v_scale", 1);
  mixed[3] = {mixed[3].name, {2}, {1, 1}};
  for (const Case& c : {Case{partial, "model.layers.1.self_attn.v_scale is missing"},
                        Case{first_missing, "model.layers.0.self_attn.k_scale is missing"},
                        Case{negative, "a KV scale is a positive finite number"},
                        Case{shape, "has 3 values; hint: a KV scale holds one value or one per KV head (2)"},
                        Case{mixed, "one granularity"}}) {
    auto m = LoadWith("kvscales-bad", c.tensors);
    ASSERT_FALSE(m.ok()) << c.needle;
    EXPECT_EQ(m.error().exit_code(), 2);
    EXPECT_NE(m.error().message.find(c.needle), std::string::npos) << m.error().message;
    EXPECT_EQ(m.error().message.find('\n'), std::string::npos);
  }
}

// scale=ckpt: the stores quantize with the checkpoint's value for their layer (and head); without
// scales, or at another granularity, the spec is refused before any compute.
TEST(ModelKvScales, ScaleCkptQuantizesWithTheCheckpointsScales) {
  ModelConfig c;
  c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 2, c.head_dim = 32, c.d_model = 64;
  const auto parse = [](const std::string& spec) { return CacheConfig::Parse(spec).value(); };
  const CacheConfig fp8 = parse("k=fp8_e4m3,v=nvfp4,scale=ckpt");
  EXPECT_NE(fp8.Validate(c, false).error().message.find("scale=ckpt: this checkpoint has no k_scale/v_scale"),
            std::string::npos);
  c.kv_scales.per_layer = 2;
  c.kv_scales.k = {0.5f, 0.625f, 1.5f, 1.625f};
  c.kv_scales.v = {0.25f, 0.375f, 1.25f, 1.375f};
  c.kv_scales.source = "model.layers.N.self_attn.k_scale / v_scale";
  EXPECT_NE(fp8.Validate(c, false).error().message.find("are per KV head; hint: add scale_by=head"), std::string::npos);
  const CacheConfig heads = parse("k=fp8_e4m3,v=nvfp4,scale=ckpt,scale_by=head");
  ASSERT_TRUE(heads.Validate(c, false).ok());
  StoreSpec spec;
  spec.head = heads.ForHead(c, 1, 1), spec.layer = 1, spec.kv_head = 1, spec.head_dim = 32, spec.max_positions = 8;
  spec.ckpt_scales = &c.kv_scales;
  EXPECT_EQ(RowCodecParamsFor(spec).scale, 1.625f);
  spec.is_key = false;
  EXPECT_EQ(RowCodecParamsFor(spec).scale, 1.375f);
}

}  // namespace
}  // namespace kvaudit
