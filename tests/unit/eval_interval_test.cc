// The intervals of the judged fidelity statistics (eval/fidelity_interval.h): known answers for
// their parts (Student's t, the expanded levels, Wilson, the independent-positions floor) and the
// properties the gate relies on (they hold the estimate, shrink with windows, are seeded, pool).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/bootstrap.h"
#include "eval/fidelity_interval.h"

namespace kvaudit {
namespace {

constexpr double kZ = 1.959963984540054;

// n windows of 100 positions; window i's KLDs are m_i ± 0.01 with m_i = 0.01·(1.5 + sin(1.7·(i mod
// 10))), so 40 windows repeat the first 10 four times (same spread, four times the data). Every
// seventh position disagrees on top-1; ΔNLL = KLD.
struct Sample {
  WindowTotals totals;
  std::vector<double> kld;    // [positions]
  std::vector<size_t> first;  // [windows]
};

Sample Windows(int n) {
  Sample s{WindowTotals(static_cast<size_t>(n)), {}, {}};
  for (int w = 0; w < n; ++w) {
    s.first.push_back(s.kld.size());
    const double m = 0.01 * (1.5 + std::sin(1.7 * (w % 10)));
    for (int i = 0; i < 100; ++i) {
      const double kld = m + (i % 2 ? 0.01 : -0.01) * m;
      s.totals.Add(static_cast<size_t>(w), kld, i % 7 != 0, kld);
      s.kld.push_back(kld);
    }
  }
  return s;
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

TEST(StudentTTest, TableAndExpansionAgreeWithKnownQuantiles) {
  EXPECT_NEAR(StudentT975(1), 12.7062, 1e-4);
  EXPECT_NEAR(StudentT975(3), 3.18245, 1e-5);
  EXPECT_NEAR(StudentT975(30), 2.04227, 1e-5);
  EXPECT_NEAR(StudentT975(31), 2.03951, 1e-5);  // the expansion takes over
  EXPECT_NEAR(StudentT975(60), 2.00030, 1e-5);
  EXPECT_NEAR(StudentT975(120), 1.97993, 1e-5);
  EXPECT_NEAR(StudentT975(100000), kZ, 1e-4);
}

TEST(ExpandedLevelsTest, WidenForFewUnitsAndTendToTwoAndAHalfPercent) {
  const Interval four = ExpandedPercentileLevels(4);  // Φ(∓√(4/3)·3.18245) = Φ(∓3.6748)
  EXPECT_NEAR(four.lo, 1.19e-4, 0.02e-4);
  EXPECT_NEAR(four.hi, 1 - 1.19e-4, 0.02e-4);
  const Interval many = ExpandedPercentileLevels(10000);
  EXPECT_NEAR(many.lo, 0.025, 0.0002);
  EXPECT_NEAR(many.hi, 0.975, 0.0002);
  EXPECT_EQ(ExpandedPercentileLevels(1).lo, 0.0);
  EXPECT_EQ(ExpandedPercentileLevels(1).hi, 1.0);
}

TEST(UnsortedQuantileTest, EqualsTheSortedOne) {
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(std::fmod(i * 0.618034, 1.0) * (i % 13));
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (double p : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    std::vector<double> copy = v;
    EXPECT_EQ(UnsortedQuantile(copy, p), SortedQuantile(sorted, p)) << p;
  }
}

TEST(FidelityIntervalTest, HoldTheEstimatesShrinkWithWindowsAndAreSeeded) {
  const Sample ten = Windows(10);
  const KldByWindow positions{&ten.kld, &ten.first};
  const FidelityIntervals a = IntervalsOf(ten.totals, 1000, 42, &positions);
  ASSERT_TRUE(a.kld_mean && a.kld_p99 && a.top1_agree && a.ppl_ratio);
  const double mean = Mean(ten.kld);
  EXPECT_LT(a.kld_mean->lo, mean);
  EXPECT_GT(a.kld_mean->hi, mean);
  EXPECT_LT(a.ppl_ratio->lo, std::exp(mean));
  EXPECT_GT(a.ppl_ratio->hi, std::exp(mean));
  EXPECT_LT(a.top1_agree->lo, 6.0 / 7);  // 1000 positions, 143 disagree: agreement 0.857
  EXPECT_GT(a.top1_agree->hi, 6.0 / 7);
  std::vector<double> sorted = ten.kld;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_LE(a.kld_p99->lo, SortedQuantile(sorted, 0.99));
  EXPECT_GE(a.kld_p99->hi, SortedQuantile(sorted, 0.99));
  // Same seed, the same bits; another seed, another interval.
  const FidelityIntervals again = IntervalsOf(ten.totals, 1000, 42, &positions);
  EXPECT_EQ(again.kld_mean->lo, a.kld_mean->lo);
  EXPECT_EQ(again.kld_p99->hi, a.kld_p99->hi);
  const FidelityIntervals other = IntervalsOf(ten.totals, 1000, 43, &positions);
  EXPECT_TRUE(other.kld_mean->lo != a.kld_mean->lo || other.kld_mean->hi != a.kld_mean->hi);
  // Four times the windows: half the standard error, and t's factor falls from 2.38 (9 degrees of
  // freedom, expanded) to 2.05, so the interval is ~0.43 times as wide.
  const FidelityIntervals forty = IntervalsOf(Windows(40).totals, 1000, 42, nullptr);
  const double ratio = (forty.kld_mean->hi - forty.kld_mean->lo) / (a.kld_mean->hi - a.kld_mean->lo);
  EXPECT_GT(ratio, 0.33);
  EXPECT_LT(ratio, 0.55);
  EXPECT_FALSE(forty.kld_p99.has_value());  // not asked for
}

TEST(FidelityIntervalTest, FewWindowsAreNeverNarrowerThanIndependentPositions) {
  // One window: no bootstrap at all; the interval is the independent-positions one exactly.
  WindowTotals one(1);
  std::vector<double> kld;
  for (int i = 0; i < 200; ++i) {
    kld.push_back(0.001 * (i % 10));
    one.Add(0, kld.back(), true, 0.0);
  }
  const FidelityIntervals ci = IntervalsOf(one, 1000, 1, nullptr);
  const double mean = Mean(kld);
  double var = 0;
  for (double x : kld) var += (x - mean) * (x - mean);
  const double half = kZ * std::sqrt(var / 199 / 200);
  EXPECT_NEAR(ci.kld_mean->lo, mean - half, 1e-12);
  EXPECT_NEAR(ci.kld_mean->hi, mean + half, 1e-12);
  // Every token agrees: Wilson's interval, [n/(n + z²), 1], not the point 1.
  EXPECT_NEAR(ci.top1_agree->lo, 200 / (200 + kZ * kZ), 1e-12);
  EXPECT_DOUBLE_EQ(ci.top1_agree->hi, 1.0);
  EXPECT_DOUBLE_EQ(ci.ppl_ratio->lo, 1.0);  // ΔNLL 0 everywhere
  EXPECT_DOUBLE_EQ(ci.ppl_ratio->hi, 1.0);
}

TEST(FidelityIntervalTest, IdenticalToTheBaselineIsAPointAtZero) {
  const Sample s = Windows(4);
  WindowTotals zero(4);
  for (size_t w = 0; w < 4; ++w) {
    for (int i = 0; i < 100; ++i) zero.Add(w, 0.0, true, 0.0);
  }
  std::vector<double> kld(400, 0.0);
  const KldByWindow positions{&kld, &s.first};
  const FidelityIntervals ci = IntervalsOf(zero, 1000, 1, &positions);
  EXPECT_EQ(ci.kld_mean->lo, 0.0);
  EXPECT_EQ(ci.kld_mean->hi, 0.0);
  EXPECT_EQ(ci.kld_p99->hi, 0.0);
  EXPECT_EQ(ci.ppl_ratio->hi, 1.0);
}

TEST(FidelityIntervalTest, PoolsByAddingSumsOfTheSameWindows) {
  const Sample s = Windows(6);
  WindowTotals early(6), late(6);  // each window's first and second 50 positions
  for (size_t w = 0; w < 6; ++w) {
    for (size_t i = 0; i < 100; ++i) {
      const double kld = s.kld[s.first[w] + i];
      (i < 50 ? early : late).Add(w, kld, i % 7 != 0, kld);
    }
  }
  ASSERT_TRUE(early.Merge(late));
  for (size_t w = 0; w < 6; ++w) {
    EXPECT_EQ(early.count[w], s.totals.count[w]);
    EXPECT_EQ(early.top1[w], s.totals.top1[w]);
    EXPECT_NEAR(early.kld_sum[w], s.totals.kld_sum[w], 1e-13);  // summed in another order
  }
  const FidelityIntervals pooled = IntervalsOf(early, 500, 3, nullptr), whole = IntervalsOf(s.totals, 500, 3, nullptr);
  EXPECT_NEAR(pooled.kld_mean->lo, whole.kld_mean->lo, 1e-13);
  EXPECT_NEAR(pooled.top1_agree->hi, whole.top1_agree->hi, 1e-13);
  EXPECT_FALSE(early.Merge(WindowTotals(5)));                                        // other windows: not a pool
  EXPECT_FALSE(IntervalsOf(WindowTotals(3), 100, 1, nullptr).kld_mean.has_value());  // no positions
}

}  // namespace
}  // namespace kvaudit
