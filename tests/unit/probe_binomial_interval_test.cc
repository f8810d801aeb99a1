// Clopper-Pearson intervals (probe/binomial_interval.h) against closed forms and published values.
#include <gtest/gtest.h>

#include <cmath>

#include "probe/binomial_interval.h"

namespace kvaudit {
namespace {

TEST(BinomialCdfTest, KnownValues) {
  EXPECT_NEAR(BinomialCdf(0, 10, 0.5), std::pow(0.5, 10), 1e-15);
  EXPECT_NEAR(BinomialCdf(5, 10, 0.5), 638.0 / 1024, 1e-12);
  EXPECT_EQ(BinomialCdf(10, 10, 0.3), 1.0);
  EXPECT_EQ(BinomialCdf(-1, 10, 0.3), 0.0);
}

TEST(ClopperPearsonTest, ClosedFormsAtTheEnds) {
  // k = 0: hi = 1 − 0.025^(1/n); k = n: lo = 0.025^(1/n).
  const Interval none = ClopperPearson95(0, 12);
  EXPECT_EQ(none.lo, 0.0);
  EXPECT_NEAR(none.hi, 1 - std::pow(0.025, 1.0 / 12), 1e-9);  // 0.2646: 0 of 12 is no proof of < 10%
  const Interval all = ClopperPearson95(20, 20);
  EXPECT_NEAR(all.lo, std::pow(0.025, 1.0 / 20), 1e-9);
  EXPECT_EQ(all.hi, 1.0);
}

TEST(ClopperPearsonTest, PublishedInterior) {
  // 5 of 20: [0.0866, 0.4910] (Clopper & Pearson's exact limits, as in any binomial table).
  const Interval ci = ClopperPearson95(5, 20);
  EXPECT_NEAR(ci.lo, 0.08657, 1e-4);
  EXPECT_NEAR(ci.hi, 0.49105, 1e-4);
  // Large n stays finite and near the normal interval: 500 of 1000.
  const Interval big = ClopperPearson95(500, 1000);
  EXPECT_NEAR(big.lo, 0.4685, 5e-4);
  EXPECT_NEAR(big.hi, 0.5315, 5e-4);
}

}  // namespace
}  // namespace kvaudit
