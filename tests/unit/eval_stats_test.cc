// Known answers for order statistics, aggregation and the safe context (the intervals:
// eval_interval_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/bootstrap.h"
#include "eval/fidelity_stats.h"

namespace kvaudit {
namespace {

TEST(QuantileTest, LinearInterpolationAtPTimesNMinusOne) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.5), 2.5);  // midpoint for even N, as llama.cpp's median
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.9), 3.7);  // at 2.7: 3 + 0.7·(4 − 3)
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(SortedQuantile(v, 1.0), 4.0);
  std::vector<double> hundred(101);
  for (int i = 0; i <= 100; ++i) hundred[static_cast<size_t>(i)] = i;
  EXPECT_DOUBLE_EQ(SortedQuantile(hundred, 0.99), 99.0);
  EXPECT_DOUBLE_EQ(SortedQuantile(hundred, 0.999), 99.9);
  EXPECT_DOUBLE_EQ(SortedQuantile({7.0}, 0.99), 7.0);
  EXPECT_TRUE(std::isnan(SortedQuantile({}, 0.5)));
}

TEST(SafeUpToTest, FailsAtTheFirstBucket) {
  const SafeRange r = SafeUpTo({{16, 0.02}, {32, 0.001}, {64, 0.001}}, 0.01);
  EXPECT_FALSE(r.up_to.has_value());  // "none"
  EXPECT_FALSE(r.is_all_measured);
}

TEST(SafeUpToTest, FailsInTheMiddle) {
  const SafeRange r = SafeUpTo({{16, 0.001}, {32, 0.005}, {64, 0.02}, {128, 0.03}}, 0.01);
  EXPECT_EQ(r.up_to, 32);
  EXPECT_FALSE(r.is_all_measured);
}

TEST(SafeUpToTest, NeverFails) {
  // The last bucket's largest measured context (4095 in windows of 4096), not its upper edge.
  const SafeRange r = SafeUpTo({{2048, 0.001}, {4095, 0.01}}, 0.01);  // equal to the threshold holds
  EXPECT_EQ(r.up_to, 4095);
  EXPECT_TRUE(r.is_all_measured);
}

TEST(SafeUpToTest, FailsThenRecoversKeepsTheContiguousPrefix) {
  const SafeRange r = SafeUpTo({{16, 0.001}, {32, 0.001}, {64, 0.05}, {128, 0.002}, {256, 0.001}}, 0.01);
  EXPECT_EQ(r.up_to, 32);  // not 256: the cache already failed at 33–64
  EXPECT_FALSE(r.is_all_measured);
}

TEST(SafeUpToTest, NoBucketsIsNotSafe) {
  const SafeRange r = SafeUpTo({}, 0.01);
  EXPECT_FALSE(r.up_to.has_value());
  EXPECT_FALSE(r.is_all_measured);
}

WindowRecord Record(int window, int first_pos, const std::vector<double>& kld, const std::vector<uint8_t>& top1) {
  WindowRecord r;
  r.window = window;
  r.first_pos = first_pos;
  const size_t n = kld.size();
  r.tokens.assign(n, 3);
  r.nll_base.assign(n, 1.0);
  WindowRecord::Config c;
  c.kld = kld;
  c.nll.assign(n, 1.1);
  c.dp.assign(n, -0.01);
  c.top1 = top1;
  c.top5_drop.assign(n, 0);
  r.configs.push_back(c);
  return r;
}

TEST(SummarizeTest, OverallBucketsAndClasses) {
  // Two windows of 4 scored positions from 0-based position 14 (context lengths 15..18).
  const std::vector<WindowRecord> w = {Record(0, 14, {0.1, 0.2, 0.3, 0.4}, {1, 1, 0, 1}),
                                       Record(1, 14, {0.0, 0.0, 0.0, 0.8}, {1, 1, 1, 1})};
  std::vector<TokenClass> classes(8, TokenClass::kOther);
  classes[3] = TokenClass::kDigits;
  std::vector<uint8_t> rare(8, 0);
  AggregateOptions o;
  o.buckets = DefaultBuckets(32);
  o.classes = &classes;
  o.rare = &rare;
  const ConfigSummary s = SummarizeConfig(w, 0, o);
  EXPECT_EQ(s.overall.tokens, 8);
  EXPECT_NEAR(s.overall.kld_mean, 0.225, 1e-12);
  EXPECT_NEAR(s.overall.kld_max, 0.8, 1e-12);
  EXPECT_NEAR(s.overall.kld_median, 0.15, 1e-12);
  EXPECT_DOUBLE_EQ(s.overall.top1_agree, 7.0 / 8.0);
  EXPECT_NEAR(s.overall.ppl_ratio, std::exp(0.1), 1e-12);
  EXPECT_NEAR(s.overall.delta_ppl, std::exp(1.1) - std::exp(1.0), 1e-12);
  EXPECT_NEAR(s.overall.dp_mean, -0.01, 1e-12);
  ASSERT_EQ(s.buckets.size(), 2u);  // 1–16 holds lengths 15, 16; 17–32 holds 17, 18
  EXPECT_EQ(s.buckets[0].tokens, 4);
  EXPECT_NEAR(s.buckets[0].kld_mean, (0.1 + 0.2 + 0.0 + 0.0) / 4, 1e-12);
  EXPECT_NEAR(s.buckets[1].kld_mean, (0.3 + 0.4 + 0.0 + 0.8) / 4, 1e-12);
  EXPECT_DOUBLE_EQ(s.buckets[1].top1_agree, 0.75);
  ASSERT_EQ(s.classes.size(), 6u);
  EXPECT_EQ(s.classes[0].name, "digits");
  EXPECT_EQ(s.classes[0].tokens, 8);
  EXPECT_EQ(s.classes[5].name, "rare");
  EXPECT_EQ(s.classes[5].tokens, 0);
  ASSERT_TRUE(s.overall.kld_ci95.has_value());
  EXPECT_LE(s.overall.kld_ci95->lo, s.overall.kld_ci95->hi);
  // Safe context from the buckets: 1–16 (mean 0.075) holds at 0.1, 17–32 (0.375) does not;
  // at 0.5 both hold, up to the longest measured context, 18 (not the bucket's edge, 32).
  EXPECT_FALSE(s.safe.up_to.has_value());  // default threshold 0.01: the first bucket fails
  o.kld_threshold = 0.1;
  const ConfigSummary part = SummarizeConfig(w, 0, o);
  EXPECT_EQ(part.safe.up_to, std::optional<int>(16));
  EXPECT_FALSE(part.safe.is_all_measured);
  o.kld_threshold = 0.5;
  const ConfigSummary all = SummarizeConfig(w, 0, o);
  EXPECT_EQ(all.safe.up_to, std::optional<int>(18));
  EXPECT_TRUE(all.safe.is_all_measured);
}

}  // namespace
}  // namespace kvaudit
