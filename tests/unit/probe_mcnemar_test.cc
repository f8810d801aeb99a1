// Exact McNemar p-values on known tables and against an independent integer binomial sum;
// attribution counts on a hand-made list of pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "probe/mcnemar.h"
#include "probe/attribution.h"

namespace kvaudit {
namespace {

// 2 · Σ_{i ≤ min(b,c)} C(n, i) / 2^n with exact 128-bit binomials (n ≤ 120), capped at 1.
double ExactByIntegers(int b, int c) {
  const int n = b + c;
  if (n == 0) return 1.0;
  const int k = b < c ? b : c;
  unsigned __int128 binom = 1;  // C(n, 0)
  unsigned __int128 tail = 0;
  for (int i = 0; i <= k; ++i) {
    tail += binom;
    binom = binom * static_cast<unsigned>(n - i) / static_cast<unsigned>(i + 1);  // exact: C(n,i+1)
  }
  const long double p = 2.0L * static_cast<long double>(tail) / std::ldexp(1.0L, n);
  return p > 1 ? 1.0 : static_cast<double>(p);
}

TEST(McNemarTest, KnownTables) {
  EXPECT_DOUBLE_EQ(McNemarExactP(0, 5), 0.0625);       // 2 / 32
  EXPECT_DOUBLE_EQ(McNemarExactP(5, 0), 0.0625);       // symmetric
  EXPECT_DOUBLE_EQ(McNemarExactP(1, 9), 0.021484375);  // 2 · 11 / 1024
  EXPECT_DOUBLE_EQ(McNemarExactP(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(McNemarExactP(7, 7), 1.0);
  EXPECT_DOUBLE_EQ(McNemarExactP(0, 1), 1.0);      // 2 · 1/2
  EXPECT_DOUBLE_EQ(McNemarExactP(4, 5), 1.0);      // 2 · 0.5 → capped
  EXPECT_DOUBLE_EQ(McNemarExactP(0, 6), 0.03125);  // first all-one-way table below 0.05
}

TEST(McNemarTest, MatchesIntegerBinomialSums) {
  // n ≤ 62 takes the exact integer path: equal to the last bit.
  for (int b = 0; b <= 31; ++b) {
    for (int c = 0; c <= 31; ++c) EXPECT_EQ(McNemarExactP(b, c), ExactByIntegers(b, c)) << "b=" << b << " c=" << c;
  }
  // Larger tables take the log-space path: relative error well under 1e-10.
  for (int b = 0; b <= 60; b += 3) {
    for (int c = 63 - b > 0 ? 63 - b : 0; c <= 60; c += 7) {
      const double want = ExactByIntegers(b, c);
      EXPECT_NEAR(McNemarExactP(b, c) / want, 1.0, 1e-10) << "b=" << b << " c=" << c;
    }
  }
}

TEST(McNemarTest, LargeCountsStayFiniteAndOrdered) {
  // b + c = 10^5: near-balanced tables give moderate p; lopsided ones tiny but monotone.
  const double balanced = McNemarExactP(50000, 50000);
  EXPECT_DOUBLE_EQ(balanced, 1.0);
  // Reference values: exact rational sums (Python fractions), rounded to double.
  const double near = McNemarExactP(49900, 50100);
  EXPECT_NEAR(near / 0.5291572940801932, 1.0, 1e-9);
  const double far = McNemarExactP(49000, 51000);
  EXPECT_NEAR(far / 2.588716038346898e-10, 1.0, 1e-9);
  EXPECT_NEAR(McNemarExactP(52000, 48000) / 1.1530938666722977e-36, 1.0, 1e-9);
  const double lopsided = McNemarExactP(0, 1000);  // 2^-999 ≈ 1.87e-301
  EXPECT_NEAR(lopsided / 1.8665272370064378e-301, 1.0, 1e-9);
  EXPECT_EQ(McNemarExactP(0, 100000), 0.0);  // true value 2^-99999 underflows; no NaN
  for (double p : {balanced, near, far, lopsided}) EXPECT_TRUE(std::isfinite(p));
}

TEST(ProbeAttributionTest, CountsRatesAndSignificance) {
  std::vector<ProbeOutcome> pairs;
  auto add = [&](bool base, bool config, int times) {
    for (int i = 0; i < times; ++i) pairs.push_back({base, config});
  };
  add(true, true, 10);
  add(true, false, 9);   // cache-induced
  add(false, true, 1);   // recovered
  add(false, false, 4);  // model limit
  const ProbeAttribution a = AttributeProbes(pairs);
  EXPECT_EQ(a.n, 24);
  EXPECT_EQ(a.both_pass, 10);
  EXPECT_EQ(a.cache_induced, 9);
  EXPECT_EQ(a.recovered, 1);
  EXPECT_EQ(a.both_fail, 4);
  EXPECT_DOUBLE_EQ(a.baseline_pass_rate, 19.0 / 24.0);
  EXPECT_DOUBLE_EQ(a.config_pass_rate, 11.0 / 24.0);
  EXPECT_DOUBLE_EQ(a.mcnemar_p, 0.021484375);
  EXPECT_EQ(a.mcnemar_p_holm, a.mcnemar_p);  // a test on its own is a family of one
  EXPECT_TRUE(a.significant);
  EXPECT_EQ(DescribeAttribution(a),
            "9 cache-induced failures, 1 recovery: significant after correction (exact McNemar p = 0.0215, "
            "Holm-adjusted p = 0.0215 < 0.05)");
}

TEST(ProbeAttributionTest, SmallDifferenceIsSaidToBeNotSignificant) {
  // 3 cache-induced failures out of 50 and nothing else: p = 0.25, not significant.
  std::vector<ProbeOutcome> pairs(47, ProbeOutcome{true, true});
  pairs.insert(pairs.end(), 3, ProbeOutcome{true, false});
  const ProbeAttribution a = AttributeProbes(pairs);
  EXPECT_DOUBLE_EQ(a.mcnemar_p, 0.25);
  EXPECT_FALSE(a.significant);
  EXPECT_EQ(DescribeAttribution(a),
            "3 cache-induced failures, 0 recoveries: not significant (exact McNemar p = 0.25, "
            "Holm-adjusted p = 0.25 >= 0.05)");
  // A stricter alpha is honoured.
  EXPECT_FALSE(AttributeProbes(std::vector<ProbeOutcome>(6, ProbeOutcome{true, false}), 0.01).significant);
}

TEST(ProbeAttributionTest, EmptyListIsNeutral) {
  const ProbeAttribution a = AttributeProbes({});
  EXPECT_EQ(DescribeAttribution(a), "0 cache-induced failures, 0 recoveries: no difference");
  EXPECT_STREQ(VerdictWords(a), "no difference");
  EXPECT_EQ(a.n, 0);
  EXPECT_EQ(a.baseline_pass_rate, 0.0);
  EXPECT_EQ(a.mcnemar_p, 1.0);
  EXPECT_FALSE(a.significant);
}

}  // namespace
}  // namespace kvaudit
