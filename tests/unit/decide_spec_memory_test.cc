// kvaudit's own accounting of a model with sliding-window layers (decide/targets/spec_memory.h):
// the f16 baseline of every "of f16" ratio and xf16 budget, a spec's bytes layer by layer, and the
// recommendation's parts, each layer over the positions its attention reads. gpt-oss-20b's
// attention: 24 layers (the even ones sliding, window 128), 8 KV heads x head_dim 64, so 2048 B per
// position and layer in f16, 1088 in q8_0.
#include <gtest/gtest.h>

#include "decide/search/budget.h"
#include "decide/search/mix_spec.h"
#include "decide/targets/spec_memory.h"
#include "decide_test_util.h"

namespace kvaudit {
namespace {

using testing::GptOss20B;

TEST(DecideSpecMemoryTest, KvauditsF16BaselineHoldsTheWindowInSlidingLayers) {
  // (12 x 2048 x 4096 + 12 x 2048 x 128) / 4096 = 24576 + 768 = 25344 B per token; at 32768 the
  // sliding layers add 12 x 2048 x 128 / 32768 = 96.
  EXPECT_EQ(F16BytesPerTokenAt(GptOss20B(), 4096), 25344u);
  EXPECT_EQ(F16BytesPerTokenAt(GptOss20B(), 32768), 24672u);
  // Without sliding layers it is F16BytesPerToken at any context: 48 x 2 x 512 x 2 = 98304.
  EXPECT_EQ(F16BytesPerTokenAt(testing::Qwen3_30B_A3B(), 5000), F16BytesPerToken(testing::Qwen3_30B_A3B()));
  auto half = ParseBudget("0.5xf16");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*BudgetBytesPerToken(*half, GptOss20B(), 4096), 12672u);
}

TEST(DecideSpecMemoryTest, SpecMemoryCountsEachLayersFormatOverItsSpan) {
  // q8_0: 1088 B per position and layer. (12 x 1088 x 4096 + 12 x 1088 x 128) / 4096 = 13056 + 408.
  const ModelConfig c = GptOss20B();
  auto uniform = SpecMemory(c, *CacheConfig::Parse("k=q8_0,v=q8_0"), 4096, nullptr);
  ASSERT_TRUE(uniform.ok()) << uniform.error().message;
  EXPECT_EQ(uniform->bytes_per_token, 13464u) << uniform->layout;
  // Layer 1 (global) in f16 adds 2048 - 1088 = 960 B per token; layer 0 (sliding) in f16 adds
  // 960 x 128 / 4096 = 30.
  auto global = SpecMemory(c, *CacheConfig::Parse("k=q8_0,v=q8_0;layers=1:k=f16,v=f16"), 4096, nullptr);
  auto sliding = SpecMemory(c, *CacheConfig::Parse("k=q8_0,v=q8_0;layers=0:k=f16,v=f16"), 4096, nullptr);
  ASSERT_TRUE(global.ok() && sliding.ok());
  EXPECT_EQ(global->bytes_per_token, 13464u + 960u);
  EXPECT_EQ(sliding->bytes_per_token, 13464u + 30u);
}

TEST(DecideSpecMemoryTest, ASlidingLayersPartCostsItsSpan) {
  // q8_0 K of one layer: 544 B per position; layer 0 holds 128 of 4096 positions: 17 B per token.
  Candidate q8;
  q8.format = KvFormat::kQ8_0;
  EXPECT_EQ(*PartBytesPerToken(GptOss20B(), q8, 1, 'k', 4096, nullptr), 544u);
  EXPECT_EQ(*PartBytesPerToken(GptOss20B(), q8, 0, 'k', 4096, nullptr), 17u);
}

}  // namespace
}  // namespace kvaudit
