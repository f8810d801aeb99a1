// KV memory of models with sliding-window layers, engine by engine, against numbers computed by hand (the arithmetic is
// in the comments). gpt-oss-20b's attention: 24 layers (12 sliding, window 128), 8 KV heads x head_dim 64, so one cell
// of one layer is 8 x 64 = 512 elements for K and 512 for V: 2048 B in f16. llama.cpp's own printed sizes are checked
// in decide_kv_memory_llamacpp_test.cc; kvaudit's own accounting in decide_spec_memory_test.cc.
#include <gtest/gtest.h>

#include "decide_test_util.h"

namespace kvaudit {
namespace {

using testing::GptOss20B;
using testing::SettingsOf;
using E = DeployTarget;

void ExpectAt(const KvMemory& m, uint64_t at_target, int ctx) {
  EXPECT_EQ(m.bytes_at_target, at_target) << m.layout;
  EXPECT_EQ(m.bytes_per_token, (at_target + ctx - 1) / ctx) << m.layout;  // the context's share, rounded up
}

TEST(DecideKvMemorySlidingTest, LlamaCppKeepsTheWindowPlusOneUbatchInSlidingLayers) {
  // Global: 12 x 4096 cells x 2048 B = 100663296. Sliding: min(4096, 128 + 512) = 640 -> 768 cells
  // (a multiple of 256): 12 x 768 x 2048 = 18874368. 119537664 B = 29184 B per token at 4096.
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=f16,v=f16", GptOss20B(), 4096);
  ExpectAt(s.memory, 119537664ull, 4096);
  EXPECT_EQ(s.memory.BytesOf(false), 100663296ull);
  EXPECT_EQ(s.memory.BytesOf(true), 18874368ull);
  EXPECT_EQ(s.memory.KBytesOf(true), 18874368ull / 2);
  EXPECT_NE(s.memory.layout.find("12 global layers x 4096 cells + 12 sliding layers x 768 cells"), std::string::npos)
      << s.memory.layout;
  EXPECT_TRUE(testing::Has(s.flags, "-np 1")) << testing::Dump(s);
  // --swa-full: every layer holds 4096 cells: 24 x 4096 x 2048 = 201326592.
  ASSERT_EQ(s.memory_variants.size(), 1u);
  EXPECT_EQ(s.memory_variants[0].flag, "--swa-full");
  ExpectAt(s.memory_variants[0].memory, 201326592ull, 4096);
}

TEST(DecideKvMemorySlidingTest, LlamaCppQ8_0At32k) {
  // q8_0: 8 heads x 68 B = 544 B for K and for V. Global 12 x 32768 x 1088 = 427819008; sliding
  // 12 x 768 x 1088 = 10027008; 437846016 B = 13362 B per token at 32768.
  ExpectAt(SettingsOf(E::kLlamaCpp, "k=q8_0,v=q8_0", GptOss20B(), 32768).memory, 437846016ull, 32768);
}

TEST(DecideKvMemorySlidingTest, Gemma3TwelveBHoldsFiveSixthsOfItsLayersForTheWindow) {
  // 8 KV heads x 256 x 2 B x (K + V) = 8192 B per cell. Global 8 x 32768 x 8192 = 2 GiB; sliding
  // min(32768, 1024 + 512) = 1536 cells: 40 x 1536 x 8192 = 503316480. 80896 B per token.
  const KvMemory m = SettingsOf(E::kLlamaCpp, "k=f16,v=f16", testing::Gemma3_12B(), 32768).memory;
  ExpectAt(m, 2650800128ull, 32768);
  EXPECT_EQ(m.bytes_per_token, 80896u);
  EXPECT_EQ(m.CellsText(), "8 global layers x 32768 cells + 40 sliding layers x 1536 cells");
}

TEST(DecideKvMemorySlidingTest, AShortContextIsTheWholeCacheInEveryLayer) {
  // 300 tokens -> 512 cells; the sliding layers' min(512, 640) is 512 too: 24 x 512 x 2048.
  ExpectAt(SettingsOf(E::kLlamaCpp, "k=f16,v=f16", GptOss20B(), 300).memory, 25165824ull, 300);
}

TEST(DecideKvMemorySlidingTest, VllmHoldsTheWindowAndOneChunkOfPrefillPlusABlock) {
  // Global: 32768 tokens = 2048 blocks of 16: 12 x 32768 x 2048 = 805306368. Sliding
  // (SlidingWindowSpec): min(128 - 1 + 8192, 32768) = 8319 tokens -> 520 blocks, + 1 = 521 blocks
  // = 8336 tokens: 12 x 8336 x 2048 = 204865536. f16 has no scales.
  const KvMemory m = SettingsOf(E::kVllm, "k=f16,v=f16", GptOss20B(), 32768).memory;
  ExpectAt(m, 1010171904ull, 32768);
  EXPECT_NE(m.layout.find("12 sliding layers x 8336 cells"), std::string::npos) << m.layout;
}

TEST(DecideKvMemorySlidingTest, SglangReservesItsSwaPoolAsARatioOfTheFullPool) {
  // set_num_tokens_hybrid_swa: swa_tokens = int(full_tokens x 0.8) whatever the window. Global
  // 12 x 4096 x 2048 = 100663296; sliding int(3276.8) = 3276 cells: 12 x 3276 x 2048 = 80510976.
  const KvMemory m = SettingsOf(E::kSglang, "k=f16,v=f16", GptOss20B(), 4096).memory;
  ExpectAt(m, 181174272ull, 4096);
  EXPECT_NE(m.layout.find("12 sliding layers x 3276 cells"), std::string::npos) << m.layout;
  EXPECT_NE(m.layout.find("--swa-full-tokens-ratio 0.8"), std::string::npos) << m.layout;
}

TEST(DecideKvMemorySlidingTest, IkLlamaCppHoldsEveryCellInEveryLayerAndSaysWhy) {
  // One cache of n_ctx cells for all 24 layers (the window only masks): 24 x 4096 x 2048.
  const KvMemory m = SettingsOf(E::kIkLlamaCpp, "k=f16,v=f16", GptOss20B(), 4096).memory;
  ExpectAt(m, 201326592ull, 4096);
  EXPECT_NE(m.layout.find("one cache for all layers, the window only masks"), std::string::npos) << m.layout;
}

TEST(DecideKvMemorySlidingTest, TensorRtLlmIsCountedFullAndSaysSo) {
  // Every layer 4096 tokens: 24 x 4096 x 2048 = 201326592 (4096 is 128 blocks of 32).
  const KvMemory m = SettingsOf(E::kTensorRtLlm, "k=f16,v=f16", GptOss20B(), 4096).memory;
  ExpectAt(m, 201326592ull, 4096);
  EXPECT_NE(m.layout.find("counted as full"), std::string::npos) << m.layout;
}

TEST(DecideKvMemorySlidingTest, TransformersDynamicCacheKeepsTheWindowLessOne) {
  // bf16, 2048 B per token and layer: global 12 x 4096 x 2048 = 100663296; sliding layers keep the
  // last 127 tokens: 12 x 127 x 2048 = 3121152.
  ExpectAt(SettingsOf(E::kTransformers, "k=bf16,v=bf16", GptOss20B(), 4096).memory, 103784448ull, 4096);
}

}  // namespace
}  // namespace kvaudit
