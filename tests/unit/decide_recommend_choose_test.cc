// ChoosePoints (decide/recommend/recommend_verify.h): which front points recommend verifies. The planted
// mix problem of docs/decision.md "A planted example" (the bundled model's shape: 8 layers, f16
// 256, q8_0 136, q4_0 72 bytes per part and token; every part's q8_0 cost 1/4096 and q4_0 1/64,
// layer 3's K 50x both).
#include <gtest/gtest.h>

#include <algorithm>

#include "decide/recommend/recommend_verify.h"
#include "decide/targets/target_settings.h"

namespace kvaudit {
namespace {

MixProblem Planted() {
  std::vector<Part> parts;
  for (int l = 0; l < 8; ++l) {
    for (char t : {'k', 'v'}) {
      const double hot = (l == 3 && t == 'k') ? 50.0 : 1.0;
      parts.push_back({l, t, {{"f16", 0, 256}, {"q8_0", hot / 4096, 136}, {"q4_0", hot / 64, 72}}});
    }
  }
  return MixProblem::FromPartsOrDie(std::move(parts));
}

bool Has(const std::vector<VerifiedPoint>& v, const std::string& spec) {
  return std::any_of(v.begin(), v.end(), [&](const VerifiedPoint& p) { return p.spec == spec; });
}

TEST(ChoosePoints, UnderTheBudgetTheBestPerLayerPointTheBestUniformOnesAndNoBaseline) {
  const MixProblem m = Planted();
  const ShapedFronts fronts = SearchFronts(m);
  ASSERT_EQ(fronts.size(), 3u);  // f16/q8_0/q4_0 share every layer: first/last applies
  const auto v = ChoosePoints(m, fronts, 1216, std::nullopt, 3, 1, CacheConfig::Parse("k=f16,v=f16").value());
  // The step past all-q4_0 (1152) goes to layer 3's K.
  EXPECT_TRUE(Has(v, "k=q4_0,v=q4_0;layers=3:k=q8_0")) << v.front().spec;
  EXPECT_TRUE(Has(v, "k=q4_0,v=q4_0"));  // the uniform point that fits (and the per-layer front's first)
  for (const VerifiedPoint& p : v) {
    EXPECT_LE(p.bytes_per_token, 1216u) << p.spec;
    EXPECT_TRUE(p.within_budget);
    EXPECT_EQ(p.round, 1);
    EXPECT_NE(p.spec, "k=f16,v=f16");
    EXPECT_EQ(p.spec, p.config.spec());  // results name a point by its configuration
  }
  for (size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i - 1].bytes_per_token, v[i].bytes_per_token);
  // A point on several fronts is verified once, with every shape it has.
  const auto q4 = std::find_if(v.begin(), v.end(), [](const VerifiedPoint& p) { return p.spec == "k=q4_0,v=q4_0"; });
  EXPECT_NE(std::find(q4->shapes.begin(), q4->shapes.end(), MixShape::kUniform), q4->shapes.end());
  EXPECT_EQ(std::count_if(v.begin(), v.end(), [](const VerifiedPoint& p) { return p.spec == "k=q4_0,v=q4_0"; }), 1);
}

TEST(ChoosePoints, TheCheapEndIsTheFewestBytesPredictedToPass) {
  const MixProblem m = Planted();
  const ShapedFronts fronts = SearchFronts(m);
  // Everything q8_0 costs 65/4096 ≈ 0.0159 and needs 2176 bytes; with a limit of 0.02 and a budget
  // that fits everything, the cheapest point predicted to pass is verified, never the baseline.
  const auto v = ChoosePoints(m, fronts, 4096, 0.02, 3, 1, CacheConfig::Parse("k=f16,v=f16").value());
  ASSERT_FALSE(v.empty());
  const MixFront& per_layer = fronts[0].second;
  size_t cheapest = per_layer.size();
  for (size_t i = 0; i < per_layer.size(); ++i) {
    if (per_layer[i].cost <= 0.02) {
      cheapest = i;
      break;
    }
  }
  ASSERT_LT(cheapest, per_layer.size());
  EXPECT_TRUE(std::any_of(v.begin(), v.end(), [&](const VerifiedPoint& p) {
    return p.bytes_per_token == per_layer[cheapest].bytes_per_token && p.predicted_kld == per_layer[cheapest].cost;
  }));
  for (const VerifiedPoint& p : v) EXPECT_NE(p.spec, "k=f16,v=f16");
}

TEST(ChoosePoints, RoundTwoLiesAboveTheBudgetUpToTheFirstPredictedToPass) {
  const MixProblem m = Planted();
  const auto v = ChoosePoints(m, SearchFronts(m), 1216, 0.001, 3, 2, CacheConfig::Parse("k=f16,v=f16").value());
  ASSERT_FALSE(v.empty());
  for (const VerifiedPoint& p : v) {
    EXPECT_GT(p.bytes_per_token, 1216u) << p.spec;
    EXPECT_FALSE(p.within_budget);
    EXPECT_EQ(p.round, 2);
  }
}

// recommend --target vllm: the same planted costs with vLLM's types (fp8_e4m3 136 and nvfp4 72
// bytes per part, costs as q8_0 and q4_0): the fronts keep only what vLLM runs exactly, one
// quantized dtype for K and V with unquantized layers, so the per-layer front's K != V points go
// and the skip-layers front gives the step past all-nvfp4: layer 3 unquantized.
TEST(ChoosePoints, UnderAVllmTargetOnlyWhatVllmRuns) {
  std::vector<Part> parts;
  for (int l = 0; l < 8; ++l) {
    for (char t : {'k', 'v'}) {
      const double hot = (l == 3 && t == 'k') ? 50.0 : 1.0;
      parts.push_back({l, t, {{"f16", 0, 256}, {"fp8_e4m3", hot / 4096, 136}, {"nvfp4", hot / 64, 72}}});
    }
  }
  const MixProblem m = MixProblem::FromPartsOrDie(std::move(parts));
  ModelConfig model;
  model.n_layers = 8, model.n_heads = 6, model.n_kv_heads = 2, model.head_dim = 64, model.d_model = 384;
  const ShapedFronts all = SearchFronts(m);
  bool some_not_runnable = false;
  for (const auto& [shape, front] : all) {
    for (const MixPoint& p : front) some_not_runnable |= !RunsExactly(DeployTarget::kVllm, m.Config(p), model);
  }
  EXPECT_TRUE(some_not_runnable);
  const ShapedFronts vllm = SearchFronts(m, DeployTarget::kVllm, &model);
  bool skip_layers = false;
  for (const auto& [shape, front] : vllm) {
    skip_layers |= shape == MixShape::kSkipLayers;
    EXPECT_FALSE(front.empty());
    for (const MixPoint& p : front) EXPECT_TRUE(RunsExactly(DeployTarget::kVllm, m.Config(p), model)) << m.Spec(p);
  }
  ASSERT_TRUE(skip_layers);
  // 1520 bytes: all nvfp4 (1152) with layer 3 in f16; kvaudit's own search verifies mixes of
  // fp8_e4m3 and nvfp4 there, which vLLM cannot run.
  const auto v = ChoosePoints(m, vllm, 1600, std::nullopt, 3, 1, CacheConfig::Parse("k=f16,v=f16").value());
  EXPECT_TRUE(Has(v, "k=nvfp4,v=nvfp4"));
  EXPECT_TRUE(Has(v, "k=nvfp4,v=nvfp4;layers=3:k=f16,v=f16"));
  const auto own = ChoosePoints(m, all, 1600, std::nullopt, 3, 1, CacheConfig::Parse("k=f16,v=f16").value());
  EXPECT_TRUE(std::any_of(own.begin(), own.end(),
                          [&](const VerifiedPoint& p) { return !RunsExactly(DeployTarget::kVllm, p.config, model); }));
  for (const VerifiedPoint& p : v) EXPECT_TRUE(RunsExactly(DeployTarget::kVllm, p.config, model)) << p.spec;
  // With TurboQuant's formats among the candidates, a preset's pair is a vLLM dtype: its end layers
  // (0, 1, 6, 7) stay unquantized, its middle layers take the pair (here cheaper in cost than fp8,
  // so at 2608 bytes it beats fp8 with three layers unquantized: 2896 bytes, twice the cost).
  std::vector<Part> tq;
  for (int l = 0; l < 8; ++l) {
    tq.push_back({l, 'k', {{"f16", 0, 256}, {"fp8_e4m3", 1.0 / 4096, 136}, {"turboquant_mse4", 1.0 / 8192, 68}}});
    tq.push_back({l, 'v', {{"f16", 0, 256}, {"fp8_e4m3", 1.0 / 4096, 136}, {"turboquant_uniform4", 1.0 / 8192, 72}}});
  }
  const MixProblem mt = MixProblem::FromPartsOrDie(std::move(tq));
  bool preset = false;
  for (const auto& [shape, front] : SearchFronts(mt, DeployTarget::kVllm, &model)) {
    for (const MixPoint& p : front) {
      EXPECT_TRUE(RunsExactly(DeployTarget::kVllm, mt.Config(p), model)) << mt.Spec(p);
      preset = preset || mt.Spec(p) == "k=f16,v=f16;layers=2-5:k=turboquant_mse4,v=turboquant_uniform4";
    }
  }
  EXPECT_TRUE(preset);
}

}  // namespace
}  // namespace kvaudit
