// The planted-sensitivity test, recommend half: the tiny random-weight Llama of
// decide_sensitivity_planted_test.cc, whose layer 2 keys carry four channels ~50x larger than the
// rest. Under a budget of all-q4_0 plus one q4_0 -> q8_0 step, the search must spend that step on
// L2.K, the verification must measure that mix on held-out windows, and once the policy's limit
// lies between that mix and all-q4_0 the recommendation must be that mix: L2.K at q8_0, the rest
// q4_0. (A model test: sensitivity and verification run real forward passes, a few seconds.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "decide/recommend/recommend.h"
#include "decide/recommend/recommend_report.h"
#include "support/fixtures.h"
#include "support/tiny_llama.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

constexpr int kPlantedLayer = 2;
constexpr const char* kRaised = "k=q4_0,v=q4_0;layers=2:k=q8_0";
constexpr const char* kAllQ4 = "k=q4_0,v=q4_0";

fs::path WriteModel() {
  testing::TinyLlamaShape shape;  // 4 layers, 2 KV heads x 64: q4_0 72, q8_0 136 bytes per part and token
  shape.embed_std = 1.0f, shape.branch_std = 0.05f;  // residual-dominated (see the sensitivity test)
  return testing::WriteTinyLlama(testing::MakeTempDir("rec-planted"), shape, [&](testing::TinyTensors& t) {
    testing::ScaleKeyChannels(t, shape, kPlantedLayer, {5, 37, 20, 52},
                              50.0f);  // channels 5, 20 and their RoPE partners
  });
}

std::vector<std::vector<int32_t>> Windows(int n, int len) { return testing::RandomWindows(n, len, 256, 7); }

fs::path WritePolicy(const fs::path& dir, double kld_mean_max) {
  const fs::path p = dir / ("policy-" + std::to_string(kld_mean_max) + ".toml");
  std::ofstream(p) << "[fidelity]\nkld_mean_max = " << kld_mean_max << "\nmin_bucket_tokens = 64\n";
  return p;
}

RecommendResult RunPlanted(const fs::path& model, const fs::path& policy, const fs::path& out) {
  auto runtime = ModelRuntime::Load(model.string(), 2);
  EXPECT_TRUE(runtime.ok()) << runtime.error().message;
  RecommendOptions o;
  o.model = model.string(), o.data = "random token ids", o.formats = {"q8_0,q4_0"}, o.stage = "full";
  o.target = "native";                           // the planted costs are the native engine's
  o.policy = policy.string(), o.budget = "640";  // all q4_0 (8 x 72 = 576) + one step (64)
  o.ctx = 256, o.calib_windows = 4, o.windows = 4, o.out = out.string();
  auto plan = RecommendPlan::FromWindows(o, std::move(*runtime), Windows(8, 256));
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  auto r = RunRecommend(*plan);
  EXPECT_TRUE(r.ok()) << r.error().message;
  std::printf("%s", RecommendText(*r, *plan).c_str());
  return std::move(*r);
}

const VerifiedPoint* Find(const RecommendResult& r, const std::string& spec) {
  for (const VerifiedPoint& p : r.verified) {
    if (p.spec == spec) return &p;
  }
  return nullptr;
}

double WorstBucketKld(const VerifiedPoint& p) {
  double worst = 0;
  for (const FidelitySummary& b : p.held_out->summary.buckets) worst = std::max(worst, b.tokens ? b.kld_mean : 0.0);
  return worst;
}

TEST(RecommendPlanted, TheBudgetStepGoesToThePlantedKeysAndIsRecommendedWhenThePolicyNeedsIt) {
  const fs::path model = WriteModel();
  const fs::path out = testing::MakeTempDir("rec-planted-out");
  // A policy everything passes: the search and the verification, not the verdict, are under test.
  const RecommendResult loose = RunPlanted(model, WritePolicy(out, 10.0), out / "run");
  EXPECT_EQ(loose.budget_bytes_per_token, 640u);
  ASSERT_FALSE(loose.fronts.empty());
  EXPECT_EQ(loose.smallest_bytes_per_token, 576u);
  const VerifiedPoint* raised = Find(loose, kRaised);
  const VerifiedPoint* all_q4 = Find(loose, kAllQ4);
  ASSERT_NE(raised, nullptr) << "the best per-layer point under the budget is verified";
  ASSERT_NE(all_q4, nullptr) << "the best uniform point under the budget is verified";
  EXPECT_EQ(raised->bytes_per_token, 640u);
  EXPECT_EQ(raised->shapes.front(), MixShape::kPerLayer);
  EXPECT_LT(raised->predicted_kld, all_q4->predicted_kld);
  ASSERT_TRUE(raised->held_out && all_q4->held_out);
  // Held out, the step on L2.K removes most of the error: it was the planted part.
  const double k_raised = WorstBucketKld(*raised), k_all = WorstBucketKld(*all_q4);
  std::printf("[planted] held-out worst bucket KLD: raised %.4g, all q4_0 %.4g\n", k_raised, k_all);
  ASSERT_LT(k_raised, 0.5 * k_all);
  // Everything passes the loose policy, so the fewest bytes win: all q4_0.
  ASSERT_TRUE(loose.recommended.has_value());
  EXPECT_EQ(loose.verified[*loose.recommended].spec, kAllQ4);

  // A limit between the two: all q4_0 fails, the raised mix passes and is recommended. The same
  // directory: sensitivity and verification resume (the policy is read, not measured).
  const RecommendResult tight = RunPlanted(model, WritePolicy(out, std::sqrt(k_raised * k_all)), out / "run");
  EXPECT_EQ(tight.sensitivity.windows_resumed_proxy, 4);
  ASSERT_TRUE(tight.recommended.has_value());
  EXPECT_EQ(tight.verified[*tight.recommended].spec, kRaised);
  EXPECT_FALSE(tight.cheapest_passing.has_value());
  EXPECT_EQ(tight.results["recommended"]["spec"], kRaised);
  EXPECT_FALSE(tight.results["nothing_under_budget"].get<bool>());
  fs::remove_all(out), fs::remove_all(model);
}

// A checkpoint that carries k_scale/v_scale: under --target vllm the default candidates are fp8
// and nvfp4 both with the checkpoint's scales and without (what vLLM runs when a model's loader
// drops them), each a configuration of its own for the search and the verification.
TEST(RecommendPlanted, CheckpointScalesMakeTheirOwnCandidatesBesideNoScales) {
  testing::TinyLlamaShape shape;
  std::vector<testing::F32Tensor> scales;
  for (int l = 0; l < shape.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    scales.push_back({p + "k_scale", {}, {0.02f}});
    scales.push_back({p + "v_scale", {}, {0.01f}});
  }
  const fs::path model = testing::WriteTinyLlama(testing::MakeTempDir("rec-ckpt"), shape, {}, scales);
  const fs::path out = testing::MakeTempDir("rec-ckpt-out");
  auto runtime = ModelRuntime::Load(model.string(), 2);
  ASSERT_TRUE(runtime.ok()) << runtime.error().message;
  RecommendOptions o;
  o.model = model.string(), o.data = "random token ids", o.target = "vllm";
  o.policy = WritePolicy(out, 10.0).string(), o.budget = "0.3xf16";
  o.ctx = 256, o.calib_windows = 2, o.windows = 2, o.out = (out / "run").string();
  auto plan = RecommendPlan::FromWindows(o, std::move(*runtime), Windows(4, 256));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->options.formats.size(), 1u);
  const std::string& formats = plan->options.formats[0];
  for (const char* c : {"fp8_e4m3,", "fp8_e4m3,scale=ckpt,", "nvfp4,", "nvfp4,scale=ckpt,", "fp8_e5m2,"})
    EXPECT_NE(formats.find(c), std::string::npos) << c << " in " << formats;
  EXPECT_EQ(formats.find("fp8_e5m2,scale=ckpt"), std::string::npos) << formats;
  plan->options.stage = "proxy";
  auto r = RunRecommend(*plan);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::string text = RecommendText(*r, *plan);
  std::printf("%s", text.c_str());
  // vLLM loads these scales: scale 1.0 is no setting of it here, so every point the search verifies
  // reads the checkpoint's scales, and each choice's scales-dropped twin is judged in round 3.
  ASSERT_TRUE(r->recommended || r->cheapest_passing);
  const VerifiedPoint& chosen = r->verified[r->recommended ? *r->recommended : *r->cheapest_passing];
  EXPECT_NE(chosen.spec.find("scale=ckpt"), std::string::npos) << chosen.spec;
  const std::string dropped = chosen.config.WithoutScales().spec();
  const VerifiedPoint* twin = Find(*r, dropped);
  ASSERT_NE(twin, nullptr) << dropped;
  EXPECT_TRUE(twin->scales_dropped);
  EXPECT_EQ(twin->round, 3);
  EXPECT_TRUE(twin->held_out.has_value());
  for (const VerifiedPoint& p : r->verified) {
    if (p.round < 3) {
      EXPECT_NE(p.spec.find("scale=ckpt"), std::string::npos) << p.spec;
    }
  }
  EXPECT_NE(text.find("scales dropped (" + dropped + ", verified): "), std::string::npos) << text;
  fs::remove_all(out);
}

}  // namespace
}  // namespace kvaudit
