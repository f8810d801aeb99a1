// Why prompt logprobs read over HTTP can be compared bitwise with in-process ones: nlohmann::json
// writes a double as the shortest text that parses back to the same double (its Grisu2-based
// dtoa), and parses with round-to-nearest; so a logprob survives dump -> parse exactly. Checked on
// logprob-like values (negative, tiny, near zero) and on arbitrary bit patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace kvaudit {
namespace {

TEST(EndpointJsonRoundTripTest, DoublesSurviveDumpAndParseBitwise) {
  std::mt19937_64 rng(20261201);
  std::uniform_real_distribution<double> logprob(-40.0, 0.0);
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    double x = 0;
    if (i % 2 == 0) {
      x = logprob(rng);
    } else {
      const uint64_t bits = rng();
      std::memcpy(&x, &bits, sizeof x);
      if (!std::isfinite(x)) continue;  // JSON has no NaN/inf (nlohmann writes null)
    }
    const std::string text = nlohmann::json(x).dump();
    const double back = nlohmann::json::parse(text).get<double>();
    ASSERT_EQ(std::memcmp(&back, &x, sizeof x), 0) << text;
    ++checked;
  }
  EXPECT_GT(checked, 19000);
  for (double x : {-0.0, std::numeric_limits<double>::denorm_min(), -1e-300, -1.0 / 3.0, -std::log(50257.0)}) {
    const double back = nlohmann::json::parse(nlohmann::json(x).dump()).get<double>();
    EXPECT_EQ(std::memcmp(&back, &x, sizeof x), 0) << x;
  }
}

}  // namespace
}  // namespace kvaudit
