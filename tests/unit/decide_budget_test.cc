// --budget (decide/search/budget.h): every unit against arithmetic in the comments, and every error kind.
#include <gtest/gtest.h>

#include "decide/search/budget.h"
#include "decide_test_util.h"

namespace kvaudit {
namespace {

uint64_t BytesPerToken(const std::string& text, const ModelConfig& c, int ctx) {
  auto b = ParseBudget(text);
  EXPECT_TRUE(b.ok()) << text << ": " << (b.ok() ? "" : b.error().message);
  if (!b.ok()) return 0;
  auto bytes = BudgetBytesPerToken(*b, c, ctx);
  EXPECT_TRUE(bytes.ok()) << text;
  return bytes.ok() ? *bytes : 0;
}

TEST(DecideBudgetTest, Units) {
  const ModelConfig c = testing::Llama3_8B();
  EXPECT_EQ(BytesPerToken("1800", c, 32768), 1800u);
  EXPECT_EQ(BytesPerToken("1800B", c, 32768), 1800u);
  EXPECT_EQ(BytesPerToken(" 1800 B ", c, 32768), 1800u);
  // 2.5 GiB over 32768 tokens: 2.5 x 2^30 / 2^15 = 2.5 x 2^15 = 81920.
  EXPECT_EQ(BytesPerToken("2.5GiB", c, 32768), 81920u);
  // 700 MiB over 4096 tokens: 700 x 2^20 / 2^12 = 700 x 256 = 179200.
  EXPECT_EQ(BytesPerToken("700MiB", c, 4096), 179200u);
  // 1 GiB over 3 tokens: 1073741824 / 3 = 357913941.33, rounded down (a budget is a limit).
  EXPECT_EQ(BytesPerToken("1GiB", c, 3), 357913941u);
  // f16 for Llama-3-8B: 32 layers x (K + V) x 8 heads x 128 x 2 B = 131072 B per token.
  EXPECT_EQ(F16BytesPerToken(c), 131072u);
  EXPECT_EQ(BytesPerToken("0.5xf16", c, 32768), 65536u);
  EXPECT_EQ(BytesPerToken("1xf16", c, 1), 131072u);
  // The bundled model's f16 cache: 8 x 2 x 2 x 64 x 2 = 4096 B; uniform q8_0 is 2176 = 0.53125 of it.
  EXPECT_EQ(BytesPerToken("0.53125xf16", testing::Small64(), 4096), 2176u);
}

TEST(DecideBudgetTest, EveryErrorIsOneLineWithAHint) {
  const ModelConfig c = testing::Llama3_8B();
  // {text, what the message must say}
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty budget"},
      {"   ", "empty budget"},
      {"GiB", "starts with a number"},
      {".5GiB", "starts with a number"},
      {"-5", "starts with a number"},
      {"1.GiB", "'1.' is not a number"},
      {"2.5GB", "unit 'GB' is ambiguous"},
      {"100KB", "unit 'KB' is ambiguous"},
      {"300MB", "unit 'MB' is ambiguous"},
      {"2.5gib", "unit 'gib' is not known"},
      {"1e3", "unit 'e3' is not known"},
      {"1.2.3GiB", "unit '.3GiB' is not known"},
      {"50%", "unit '%' is not known"},
      {"1800.5", "whole number"},
      {"1800.5B", "whole number"},
      {"0", "above zero"},
      {"0.0xf16", "above zero"},
      {"10000000000000", "above 10^12"},
  };
  for (const auto& [text, what] : bad) {
    auto b = ParseBudget(text);
    ASSERT_FALSE(b.ok()) << text;
    EXPECT_EQ(b.error().code, ErrorCode::kBadInput) << text;
    EXPECT_NE(b.error().message.find(what), std::string::npos) << text << ": " << b.error().message;
    EXPECT_EQ(b.error().message.rfind("--budget \"" + text + "\": ", 0), 0u) << b.error().message;
    EXPECT_NE(b.error().message.find("; hint: "), std::string::npos) << b.error().message;
    EXPECT_EQ(b.error().message.find('\n'), std::string::npos) << b.error().message;
  }
  // Parses, but allows less than a byte per token for this model.
  for (const std::string text : {"0.000001xf16", "1MiB"}) {
    auto b = ParseBudget(text);
    ASSERT_TRUE(b.ok()) << text;
    auto bytes = BudgetBytesPerToken(*b, c, 4 * 1048576);  // 1 MiB over 4 Mi tokens: 0.25 B per token
    ASSERT_FALSE(bytes.ok()) << text;
    EXPECT_EQ(bytes.error().code, ErrorCode::kBadInput);
    EXPECT_NE(bytes.error().message.find("less than one byte per token"), std::string::npos) << bytes.error().message;
    EXPECT_NE(bytes.error().message.find("hint: raise the budget (the f16 cache is 131072 bytes per token)"),
              std::string::npos)
        << bytes.error().message;
  }
}

}  // namespace
}  // namespace kvaudit
