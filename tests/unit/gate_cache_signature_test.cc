// The signature an audit records and `gate --endpoint` matches (decide/gate/cache_signature.h):
// the sequence cut from a window, the JSON round trip and its errors, the distance, the nearest.
#include "decide/gate/cache_signature.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kvaudit {
namespace {

TEST(CacheSignatureTest, AWindowGivesItsFirstTokensAndTheirLastPositions) {
  std::vector<int32_t> window(1000);
  std::iota(window.begin(), window.end(), 0);
  const CacheSignatures f = CacheSignatures::ForWindow(window);
  ASSERT_EQ(f.ids.size(), kSignatureLength);
  EXPECT_EQ(f.ids.size() - f.first - 1, kSignaturePositions);
  const std::vector<int32_t> short_window = {5, 6, 7};
  const CacheSignatures s = CacheSignatures::ForWindow(short_window);
  EXPECT_EQ(s.ids, short_window);
  EXPECT_EQ(s.first, 0u);  // every position
}

TEST(CacheSignatureTest, JsonRoundTripsAndAMalformedRecordIsOneLine) {
  CacheSignatures f;
  f.ids = {1, 2, 3, 4}, f.first = 1;
  f.logprobs["k=f32,v=f32"] = {-0.5, -1.25};
  f.logprobs["q4"] = {-0.75, -1.0};
  const auto back = CacheSignatures::FromJson(f.ToJson(), "r.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->ids, f.ids);
  EXPECT_EQ(back->first, f.first);
  EXPECT_EQ(back->logprobs, f.logprobs);
  nlohmann::json wrong = f.ToJson();
  wrong["logprobs"]["q4"] = {-0.75};
  const auto bad = CacheSignatures::FromJson(wrong, "r.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "r.json: signature of q4 has the wrong length; hint: rerun the audit with this kvaudit");
  nlohmann::json outside = f.ToJson();
  outside["first"] = 3;
  EXPECT_FALSE(CacheSignatures::FromJson(outside, "r.json"));
  EXPECT_FALSE(CacheSignatures::FromJson(nlohmann::json::array(), "r.json"));
}

TEST(CacheSignatureTest, TheNearestConfigurationAndTheDistanceToTheExpectedOne) {
  CacheSignatures f;
  f.ids = {1, 2, 3}, f.first = 0;
  f.logprobs["base"] = {-1.0, -2.0};
  f.logprobs["q8"] = {-1.0, -2.1};
  f.logprobs["q4"] = {-1.5, -2.5};
  EXPECT_DOUBLE_EQ(SignatureDistance(f.logprobs["base"], f.logprobs["q4"]), 0.5);
  const std::vector<double> live = {-1.0, -2.1};
  const SignatureMatch m = MatchSignature(f, live, "q4");
  EXPECT_EQ(m.nearest, "q8");
  EXPECT_DOUBLE_EQ(m.nearest_distance, 0);
  EXPECT_EQ(m.runner_up, "base");
  EXPECT_NEAR(m.runner_up_distance, 0.05, 1e-12);
  ASSERT_TRUE(m.expected_distance);
  EXPECT_NEAR(*m.expected_distance, 0.45, 1e-12);
  EXPECT_FALSE(MatchSignature(f, live, "not-recorded").expected_distance);
}

}  // namespace
}  // namespace kvaudit
