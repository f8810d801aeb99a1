// Spearman's rank correlation with average ranks for ties (decide/sensitivity/rank_correlation.h), and the
// proxy's agreement measure built on it (decide/sensitivity/sensitivity_proxy.h).
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "decide/sensitivity/rank_correlation.h"
#include "decide/sensitivity/sensitivity_proxy.h"

namespace kvaudit {
namespace {

TEST(RankCorrelation, AverageRanksShareTiedPositions) {
  EXPECT_EQ(AverageRanks({5, 1, 5}), (std::vector<double>{2.5, 1, 2.5}));
  // {3, 3, 3, 0} is what found g++ 12.2's AVX-512 miscompile (tests/unit/base_compiler_canary_test.cc).
  EXPECT_EQ(AverageRanks({3, 3, 3, 0}), (std::vector<double>{3, 3, 3, 1}));
  EXPECT_EQ(AverageRanks({3, 0, 3, 3}), (std::vector<double>{3, 1, 3, 3}));
  EXPECT_EQ(AverageRanks({0.2, 0.1, 0.4, 0.3}), (std::vector<double>{2, 1, 4, 3}));
}

TEST(RankCorrelation, SpearmanOfOrderingsWithAndWithoutTies) {
  EXPECT_DOUBLE_EQ(*Spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(*Spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Monotone transforms do not matter, only order.
  EXPECT_DOUBLE_EQ(*Spearman({0.001, 0.01, 0.1, 1}, {1, 2, 3, 4}), 1.0);
  // Without ties rho = 1 − 6 Σd² / (n(n² − 1)): one swap of neighbours in 5 gives 1 − 12/120.
  EXPECT_NEAR(*Spearman({1, 2, 3, 4, 5}, {1, 2, 3, 5, 4}), 0.9, 1e-15);
  // Ties: ranks {1, 2.5, 2.5, 4} against {1, 2, 3, 4}: Pearson of the ranks = 4.5 / sqrt(4.5 · 5) = sqrt(0.9).
  EXPECT_NEAR(*Spearman({1, 2, 2, 3}, {1, 2, 3, 4}), std::sqrt(0.9), 1e-15);
  // Undefined: one item, or a side with every value tied.
  EXPECT_FALSE(Spearman({1}, {2}).has_value());
  EXPECT_FALSE(Spearman({1, 1, 1}, {1, 2, 3}).has_value());
}

ConfigResult Attention(std::vector<std::array<double, 5>> rows) {  // {layer, head, k_rel, v_rel, out_rel}
  ConfigResult c;
  for (const auto& r : rows) {
    AttnSummary a;
    a.layer = static_cast<int>(r[0]), a.kv_head = static_cast<int>(r[1]);
    a.k_rel_err = r[2], a.v_rel_err = r[3], a.out_rel_err = r[4], a.attn_kl = 10 * r[2];
    c.attention.push_back(a);
  }
  return c;
}

TEST(SensitivityProxy, ScoresAverageKvHeadsAndTakeEachTensorFromItsOwnRun) {
  const ConfigResult k_only =
      Attention({{0, 0, 0.1, 0, 0.2}, {0, 1, 0.3, 0, 0.4}, {1, 0, 0.5, 0, 0.6}, {1, 1, 0.5, 0, 0.8}});
  const ConfigResult v_only =
      Attention({{0, 0, 0, 0.1, 0.05}, {0, 1, 0, 0.1, 0.15}, {1, 0, 0, 0.2, 0.3}, {1, 1, 0, 0.2, 0.3}});
  const std::vector<double> out = ProxyScores(k_only, v_only, 2, ProxyQuantity::kOutRelErr);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_DOUBLE_EQ(out[0], 0.3);  // L0.K: mean of 0.2, 0.4
  EXPECT_DOUBLE_EQ(out[1], 0.1);  // L0.V
  EXPECT_DOUBLE_EQ(out[2], 0.7);  // L1.K
  EXPECT_DOUBLE_EQ(out[3], 0.3);  // L1.V
  const std::vector<double> rel = ProxyScores(k_only, v_only, 2, ProxyQuantity::kTensorRelErr);
  EXPECT_DOUBLE_EQ(rel[0], 0.2);
  EXPECT_DOUBLE_EQ(rel[1], 0.1);
  const std::vector<double> kl = ProxyScores(k_only, v_only, 2, ProxyQuantity::kAttnKl);
  EXPECT_DOUBLE_EQ(kl[2], 5.0);
  EXPECT_EQ(kl[3], 0.0);  // V does not move the attention weights

  // Agreement over the measured parts only; attn_kl says nothing about V, so no overall rho.
  const std::vector<std::optional<double>> e2e = {0.02, 0.01, 0.05, std::nullopt};
  const ProxyAgreement a = MeasureProxy(out, e2e, ProxyQuantity::kOutRelErr);
  EXPECT_EQ(a.parts, 3);
  EXPECT_DOUBLE_EQ(*a.all, 1.0);
  EXPECT_DOUBLE_EQ(*a.k, 1.0);
  EXPECT_FALSE(a.v.has_value());  // one measured V part
  const ProxyAgreement b = MeasureProxy(kl, e2e, ProxyQuantity::kAttnKl);
  EXPECT_FALSE(b.all.has_value());
  EXPECT_EQ(b.quantity, "attn_kl");
}

}  // namespace
}  // namespace kvaudit
