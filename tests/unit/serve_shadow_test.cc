// The shadow monitor's pure parts (src/serve/histogram.h, shadow_metrics.h, shadow.h): the
// Prometheus histogram text, the per-bucket exposition, the deterministic sampling and the
// per-position comparison (eval's BaseRow: exactly 0 for identical logits).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve/histogram.h"
#include "serve/shadow.h"
#include "serve/shadow_metrics.h"

namespace kvaudit::serve {
namespace {

TEST(ServeHistogramTest, CumulativeBucketsSumAndCountInExpositionFormat) {
  Histogram h({0, 0.1, 1});
  for (double x : {0.0, 0.05, 0.1, 0.5, 7.0}) h.Observe(x);
  EXPECT_EQ(h.Render("m", "context=\"1-16\""),
            "m_bucket{context=\"1-16\",le=\"0\"} 1\n"
            "m_bucket{context=\"1-16\",le=\"0.1\"} 3\n"
            "m_bucket{context=\"1-16\",le=\"1\"} 4\n"
            "m_bucket{context=\"1-16\",le=\"+Inf\"} 5\n"
            "m_sum{context=\"1-16\"} 7.65\n"
            "m_count{context=\"1-16\"} 5\n");
  EXPECT_EQ(Histogram({1}).Render("e", ""), "e_bucket{le=\"1\"} 0\ne_bucket{le=\"+Inf\"} 0\ne_sum 0\ne_count 0\n");
}

TEST(ServeShadowMetricsTest, ByContextBucketOnlyWhereRequestsReached) {
  ShadowMetrics m(64);  // buckets 1-16, 17-32, 33-64
  m.Record({{1, 0.5, 0.25, true}, {16, 0.0, 0.0, false}, {40, 0.002, -0.01, true}}, 0.5, 0.25);
  const std::string text = m.Render();
  for (const char* line :
       {"kvaudit_shadow_requests_total 1\n", "kvaudit_shadow_cpu_seconds_total 0.5\n",
        "kvaudit_shadow_seconds_total 0.25\n", "kvaudit_shadow_positions_total{context=\"1-16\"} 2\n",
        "kvaudit_shadow_positions_total{context=\"33-64\"} 1\n",
        "kvaudit_shadow_top1_agree_total{context=\"1-16\"} 1\n", "kvaudit_shadow_kld_sum{context=\"1-16\"} 0.5\n",
        "kvaudit_shadow_kld_count{context=\"33-64\"} 1\n",
        "kvaudit_shadow_kld_bucket{context=\"33-64\",le=\"0.001\"} 0\n",
        "kvaudit_shadow_kld_bucket{context=\"33-64\",le=\"0.01\"} 1\n",
        "kvaudit_shadow_delta_nll_sum{context=\"33-64\"} -0.01\n", "# TYPE kvaudit_shadow_kld histogram\n",
        "# TYPE kvaudit_shadow_positions_total counter\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("17-32"), std::string::npos) << text;  // no position there
}

TEST(ServeShadowTest, SamplingIsEvenlySpacedAndExact) {
  auto quarter = ShadowMonitor::Open({0.25, "", 64});
  ASSERT_TRUE(quarter.ok());
  std::string picks;
  for (int i = 0; i < 12; ++i) picks += (*quarter)->Sample() ? 'x' : '.';
  EXPECT_EQ(picks, "...x...x...x");
  auto all = ShadowMonitor::Open({1.0, "", 64});
  auto none = ShadowMonitor::Open({0.0, "", 64});
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE((*all)->Sample());
    EXPECT_FALSE((*none)->Sample());
  }
  auto bad = ShadowMonitor::Open({1.0, "/nonexistent-dir/x.jsonl", 64});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--shadow-log"), std::string::npos);
}

TEST(ServeShadowTest, IdenticalLogitsCompareExactlyEqual) {
  const size_t vocab = 4;
  const std::vector<int32_t> tokens = {0, 2, 1};
  const std::vector<float> shadow = {0.1f, 0.2f, 3.0f, -1.0f, 2.0f, 0.5f, 0.5f, 0.0f};  // [2, vocab]
  const auto same = ComparePositions(shadow, shadow, tokens, vocab);
  ASSERT_EQ(same.size(), 2u);
  for (const auto& p : same) {
    EXPECT_EQ(p.kld, 0.0);
    EXPECT_EQ(p.delta_nll, 0.0);
    EXPECT_TRUE(p.top1);
  }
  EXPECT_EQ(same[0].context, 1);
  EXPECT_EQ(same[1].context, 2);
  std::vector<float> served = shadow;
  served[3] = 5.0f;  // row 0's argmax moves from id 2 to id 3
  const auto moved = ComparePositions(served, shadow, tokens, vocab);
  EXPECT_GT(moved[0].kld, 0.1);
  EXPECT_GT(moved[0].delta_nll, 0.0);  // the served cache gives the true token (2) less
  EXPECT_FALSE(moved[0].top1);
  EXPECT_EQ(moved[1].kld, 0.0);
}

}  // namespace
}  // namespace kvaudit::serve
