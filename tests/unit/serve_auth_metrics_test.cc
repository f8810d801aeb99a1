// The API key check and the Prometheus exposition of `kvaudit serve` (src/serve/auth.h, metrics.h).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "serve/auth.h"
#include "serve/metrics.h"
#include "support/fixtures.h"

namespace kvaudit::serve {
namespace {

TEST(ServeAuthTest, BearerMatchesOnlyTheExactKey) {
  EXPECT_TRUE(BearerMatches("Bearer s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer s3creT", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer s3cret ", "s3cret"));
  EXPECT_FALSE(BearerMatches("bearer s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer ", "s3cret"));
}

TEST(ServeAuthTest, KeyFileFirstLineTrimmedAndErrorsNeverShowTheKey) {
  const auto dir = testing::MakeTempDir("serve_auth");
  std::ofstream(dir / "key") << "  k-123\t\r\nsecond line\n";
  auto key = ReadApiKeyFile((dir / "key").string());
  ASSERT_TRUE(key.ok()) << key.error().message;
  EXPECT_EQ(*key, "k-123");
  std::ofstream(dir / "blank") << "   \n";
  auto blank = ReadApiKeyFile((dir / "blank").string());
  ASSERT_FALSE(blank.ok());
  EXPECT_EQ(blank.error().exit_code(), 2);
  EXPECT_NE(blank.error().message.find("holds no key"), std::string::npos);
  auto missing = ReadApiKeyFile((dir / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot be read"), std::string::npos);
}

TEST(ServeMetricsTest, CountersAndCumulativeHistogram) {
  Metrics m;
  m.RecordRequest("/v1/completions", 200, 0.003);
  m.RecordRequest("/v1/completions", 200, 0.2);
  m.RecordRequest("/v1/completions", 400, 100.0);
  m.RecordRequest("other", 413, -1);  // refused before routing: counted, not timed
  m.AddTokens(10, 4);
  m.AddTokens(5, 1);
  const std::string text = m.Render(3, 1);
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("# TYPE kvaudit_requests_total counter"));
  EXPECT_TRUE(has("kvaudit_requests_total{endpoint=\"/v1/completions\",code=\"200\"} 2"));
  EXPECT_TRUE(has("kvaudit_requests_total{endpoint=\"/v1/completions\",code=\"400\"} 1"));
  EXPECT_TRUE(has("kvaudit_requests_total{endpoint=\"other\",code=\"413\"} 1"));
  EXPECT_TRUE(has("kvaudit_prompt_tokens_total 15"));
  EXPECT_TRUE(has("kvaudit_completion_tokens_total 5"));
  EXPECT_TRUE(has("kvaudit_queue_depth 3"));
  EXPECT_TRUE(has("kvaudit_requests_running 1"));
  EXPECT_TRUE(has("# TYPE kvaudit_request_duration_seconds histogram"));
  EXPECT_TRUE(has("kvaudit_request_duration_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has("kvaudit_request_duration_seconds_bucket{le=\"0.1\"} 1"));
  EXPECT_TRUE(has("kvaudit_request_duration_seconds_bucket{le=\"0.25\"} 2"));
  EXPECT_TRUE(has("kvaudit_request_duration_seconds_bucket{le=\"30\"} 2"));
  EXPECT_TRUE(has("kvaudit_request_duration_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(has("kvaudit_request_duration_seconds_count 3"));
}

}  // namespace
}  // namespace kvaudit::serve
