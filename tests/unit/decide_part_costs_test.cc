// PartCosts (decide/recommend/part_costs.h): measured parts keep their one-at-a-time KLD; the unmeasured
// ones of a tensor share what the K-only (V-only) KLD leaves, by proxy score; with nothing left,
// they are scaled from the least measured part; with nothing measured, the whole tensor-only KLD.
#include <gtest/gtest.h>

#include "decide/recommend/part_costs.h"

namespace kvaudit {
namespace {

ConfigResult WithKld(double kld) {
  ConfigResult c;
  c.summary.overall.kld_mean = kld;
  return c;
}

// Two layers: parts L0.K, L0.V, L1.K, L1.V. measured[i]: the one-at-a-time KLD, or < 0.
SensitivityResult Result(double k_only, double v_only, const std::vector<double>& proxy,
                         const std::vector<double>& measured) {
  CandidateResult c;
  c.k_only = WithKld(k_only), c.v_only = WithKld(v_only);
  const std::vector<CachePart> parts = AllParts(2);
  for (size_t i = 0; i < parts.size(); ++i) {
    PartResult p{parts[i], proxy[i], std::nullopt, std::nullopt};
    if (measured[i] >= 0) p.one_at_a_time = WithKld(measured[i]);
    c.parts.push_back(p);
  }
  SensitivityResult r;
  r.candidates.push_back(c);
  return r;
}

TEST(PartCosts, MeasuredPartsKeepTheirKldAndTheRestShareTheRemainderByProxy) {
  // K only 0.10; L0.K measured 0.06, so L1.K gets the 0.04 left. V: L1.V measured 0.01 of 0.03,
  // L0.V gets 0.02.
  const auto c = PartCosts(Result(0.10, 0.03, {5, 1, 2, 3}, {0.06, -1, -1, 0.01}))[0];
  EXPECT_DOUBLE_EQ(c[0].kld, 0.06);
  EXPECT_TRUE(c[0].measured);
  EXPECT_NEAR(c[2].kld, 0.04, 1e-15);
  EXPECT_FALSE(c[2].measured);
  EXPECT_NEAR(c[1].kld, 0.02, 1e-15);
  EXPECT_DOUBLE_EQ(c[3].kld, 0.01);
}

TEST(PartCosts, WithNothingMeasuredTheTensorOnlyKldIsSharedByProxy) {
  const auto c = PartCosts(Result(0.09, 0.04, {2, 1, 1, 3}, {-1, -1, -1, -1}))[0];
  EXPECT_NEAR(c[0].kld, 0.06, 1e-15);  // 2 / 3 of K only
  EXPECT_NEAR(c[2].kld, 0.03, 1e-15);
  EXPECT_NEAR(c[1].kld, 0.01, 1e-15);  // 1 / 4 of V only
  EXPECT_NEAR(c[3].kld, 0.03, 1e-15);
  for (const PartCost& p : c) EXPECT_FALSE(p.measured);
}

TEST(PartCosts, WhenTheMeasuredPartsAccountForEverythingTheRestScaleFromTheLeastMeasured) {
  // K only 0.05 but L0.K alone measured 0.06 (noise): L1.K, proxied at half of L0.K's score, gets
  // half of L0.K's cost; never more than it.
  const auto c = PartCosts(Result(0.05, 0.02, {4, 1, 2, 1}, {0.06, 0.02, -1, -1}))[0];
  EXPECT_NEAR(c[2].kld, 0.03, 1e-15);
  EXPECT_NEAR(c[3].kld, 0.02, 1e-15);  // V: L0.V measured 0.02 = all of V only; L1.V proxied equal
}

}  // namespace
}  // namespace kvaudit
