#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "run/sampling.h"

namespace kvaudit {
namespace {

TEST(SamplingTest, GreedyPicksLowestIdAmongTies) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  Sampler s(SamplingParams{});
  EXPECT_EQ(s.Sample(logits), 1);
  EXPECT_EQ(Argmax(std::vector<float>{NAN, 1.0f, 3.0f}), 2);
}

TEST(SamplingTest, SameSeedSameSequenceDifferentSeedDiffers) {
  std::vector<float> logits(64);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  auto run = [&](uint64_t seed) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.Sample(logits));
    return out;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(SamplingTest, TopKOneIsGreedy) {
  std::vector<float> logits = {0.1f, 0.3f, 0.2f};
  SamplingParams p;
  p.temperature = 5.0f;
  p.top_k = 1;
  Sampler s(p);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.Sample(logits), 1);
}

TEST(SamplingTest, TopPKeepsSmallestPrefixReachingMass) {
  // probabilities 0.5, 0.3, 0.2 (log-space logits); top_p 0.75 keeps ids 0 and 1 only.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.75f;
  p.seed = 3;
  Sampler s(p);
  std::map<int32_t, int> counts;
  for (int i = 0; i < 4000; ++i) counts[s.Sample(logits)]++;
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_NEAR(counts[0] / 4000.0, 0.5 / 0.8, 0.03);
}

TEST(SamplingTest, MinPDropsTokensBelowFractionOfTop) {
  std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingParams p;
  p.temperature = 1.0f;
  p.min_p = 0.2f;  // threshold 0.12: id 2 (0.1) is dropped
  Sampler s(p);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(s.Sample(logits), 2);
}

TEST(SamplingTest, TemperatureSamplesMatchSoftmax) {
  std::vector<float> logits = {1.0f, 0.0f};
  SamplingParams p;
  p.temperature = 0.5f;
  Sampler s(p);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.Sample(logits) == 0;
  const double expected = 1.0 / (1.0 + std::exp(-2.0));
  EXPECT_NEAR(static_cast<double>(ones) / n, expected, 0.015);
}

}  // namespace
}  // namespace kvaudit
