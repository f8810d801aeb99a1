// Fidelity from top-k logprobs (eval/topk_fidelity.h): ΔNLL, Δp, top-1 and top-5 drop are the
// full-vocabulary values bit for bit; the KLD is a lower bound of the full KL that tightens as k
// grows and reaches it when the known tokens cover the vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "eval/topk_fidelity.h"
#include "run/log_softmax.h"

namespace kvaudit {
namespace {

constexpr size_t kVocab = 64;

std::vector<float> RandomLogits(std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(kVocab);
  for (float& x : v) x = d(rng);
  return v;
}

// What a server reports: the true token's logprob and the top k, ties to the lower id, computed as
// kvaudit serve does (double logit minus double LogSumExp).
TopKRow Report(const std::vector<float>& logits, int32_t token, size_t k) {
  const double lse = LogSumExp(logits);
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  TopKRow r;
  r.token = token;
  r.logprob = static_cast<double>(logits[static_cast<size_t>(token)]) - lse;
  for (size_t i = 0; i < k; ++i)
    r.top.push_back({ids[i], static_cast<double>(logits[static_cast<size_t>(ids[i])]) - lse});
  return r;
}

TEST(EvalTopKFidelityTest, ExactMetricsEqualTheFullVocabularyBitForBit) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const auto base_logits = RandomLogits(rng, 3.f);
    auto cfg_logits = base_logits;
    std::normal_distribution<float> noise(0.f, trial % 2 ? 0.05f : 1.5f);
    for (float& x : cfg_logits) x += noise(rng);
    const int32_t token = static_cast<int32_t>(rng() % kVocab);
    BaseRow base;
    base.Set(base_logits, token);
    const PositionFidelity full = base.Compare(cfg_logits);
    const PositionFidelity topk = CompareTopK(base, Report(cfg_logits, token, kMinTopK));
    EXPECT_EQ(topk.nll, full.nll);
    EXPECT_EQ(topk.dp, full.dp);
    EXPECT_EQ(topk.top1, full.top1);
    EXPECT_EQ(topk.top5_drop, full.top5_drop);
    // The remote-baseline variant agrees on the exact metrics as well.
    const PositionFidelity both = CompareTopK(Report(base_logits, token, 20), Report(cfg_logits, token, 20));
    EXPECT_EQ(both.nll, full.nll);
    EXPECT_EQ(both.top1, full.top1);
    EXPECT_EQ(both.top5_drop, full.top5_drop);
    EXPECT_NEAR(both.dp, full.dp, 1e-15);
    // A remote baseline against an in-process configuration: exact metrics bit for bit too.
    const PositionFidelity mixed = CompareTopK(Report(base_logits, token, 20), cfg_logits);
    EXPECT_EQ(mixed.nll, full.nll);
    EXPECT_EQ(mixed.dp, full.dp);
    EXPECT_EQ(mixed.top1, full.top1);
    EXPECT_EQ(mixed.top5_drop, full.top5_drop);
    EXPECT_LE(mixed.kld, full.kld * (1 + 1e-12));
  }
}

TEST(EvalTopKFidelityTest, KldIsALowerBoundThatTightensWithKAndIsExactAtFullCoverage) {
  std::mt19937 rng(11);
  int strictly_below = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const auto base_logits = RandomLogits(rng, 2.f);
    auto cfg_logits = base_logits;
    std::normal_distribution<float> noise(0.f, 0.5f);
    for (float& x : cfg_logits) x += noise(rng);
    const int32_t token = static_cast<int32_t>(rng() % kVocab);
    BaseRow base;
    base.Set(base_logits, token);
    const double kl = base.Compare(cfg_logits).kld;
    ASSERT_GT(kl, 0);
    double previous = 0;
    for (size_t k : {1, 5, 10, 20, 40, 64}) {
      const double bound = CompareTopK(base, Report(cfg_logits, token, k)).kld;
      EXPECT_LE(bound, kl * (1 + 1e-12)) << "k " << k;
      EXPECT_GE(bound, previous * (1 - 1e-12)) << "k " << k;  // a finer partition never lowers it
      previous = bound;
      if (k == 5 && bound < kl * 0.999) ++strictly_below;
    }
    EXPECT_NEAR(previous, kl, 1e-12 + 1e-9 * kl);
    // Both sides by their top k: also a bound, and exact when both cover the vocabulary.
    EXPECT_LE(CompareTopK(Report(base_logits, token, 20), Report(cfg_logits, token, 20)).kld, kl * (1 + 1e-12));
    EXPECT_NEAR(CompareTopK(Report(base_logits, token, 64), Report(cfg_logits, token, 64)).kld, kl, 1e-12 + 1e-9 * kl);
    EXPECT_NEAR(CompareTopK(Report(base_logits, token, 64), cfg_logits).kld, kl, 1e-12 + 1e-9 * kl);
  }
  EXPECT_GT(strictly_below, 100);  // at k = 5 the bound is genuinely a bound, not the KL
}

TEST(EvalTopKFidelityTest, LumpedKlOfIdenticalSidesIsZero) {
  EXPECT_EQ(LumpedKl({{std::log(0.5), std::log(0.5)}, {std::log(0.25), std::log(0.25)}}), 0.0);
  EXPECT_EQ(LumpedKl({}), 0.0);
  // Two known categories and the rest: 0.5 ln(0.5/0.25) + 0.25 ln(0.25/0.5) + 0.25 ln(0.25/0.25).
  EXPECT_NEAR(LumpedKl({{std::log(0.5), std::log(0.25)}, {std::log(0.25), std::log(0.5)}}),
              0.5 * std::log(2.0) - 0.25 * std::log(2.0), 1e-15);
}

}  // namespace
}  // namespace kvaudit
