// KV memory in each engine's layout, against numbers computed by hand for a Llama-3-8B-shaped
// model: 32 layers, 8 KV heads, head_dim 128, so one token's K (or V) in one layer is
// 8 x 128 = 1024 elements. The arithmetic is in the comments.
#include <gtest/gtest.h>

#include "decide_test_util.h"

namespace kvaudit {
namespace {

using testing::SettingsOf;
using E = DeployTarget;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Memory is checked for specs the engine runs exactly, so it is the spec's own.
void ExpectMemory(const TargetSettings& s, uint64_t per_token, uint64_t at_target) {
  EXPECT_TRUE(s.exact) << testing::Dump(s);
  EXPECT_EQ(s.memory.bytes_per_token, per_token) << testing::Dump(s) << "\n" << s.memory.layout;
  EXPECT_EQ(s.memory.bytes_at_target, at_target) << s.memory.layout;
  EXPECT_DOUBLE_EQ(s.memory.gib_at_target, static_cast<double>(at_target) / kGiB);
}

TEST(DecideKvMemoryTest, LlamaCppQ8_0At32k) {
  // q8_0: 34 bytes per 32 elements -> 1024 elements = 32 blocks = 1088 B for K, 1088 B for V;
  // 2176 B per layer x 32 layers = 69632 B per token; x 32768 cells = 2281701376 B = 2.125 GiB.
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=q8_0,v=q8_0");
  ExpectMemory(s, 69632, 2281701376ull);
  EXPECT_DOUBLE_EQ(s.memory.gib_at_target, 2.125);
}

TEST(DecideKvMemoryTest, LlamaCppQ4_0At32k) {
  // q4_0: 18 B per 32 -> 32 x 18 = 576 B for K and for V; 1152 B x 32 layers = 36864 B per token;
  // x 32768 = 1207959552 B = 1.125 GiB.
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=q4_0,v=q4_0");
  ExpectMemory(s, 36864, 1207959552ull);
  EXPECT_DOUBLE_EQ(s.memory.gib_at_target, 1.125);
}

TEST(DecideKvMemoryTest, LlamaCppF16At32k) {
  // f16: 2 B x 1024 = 2048 B for K and for V; 4096 B x 32 = 131072 B per token; x 32768 = 4 GiB.
  const TargetSettings s = SettingsOf(E::kLlamaCpp, "k=f16,v=f16");
  ExpectMemory(s, 131072, 4294967296ull);
  EXPECT_DOUBLE_EQ(s.memory.gib_at_target, 4.0);
}

TEST(DecideKvMemoryTest, LlamaCppKeysAndValuesAreCountedSeparately) {
  // K q8_0 1088 B + V q4_0 576 B = 1664 B per layer; x 32 = 53248 B per token; x 32768 = 1.625 GiB.
  ExpectMemory(SettingsOf(E::kLlamaCpp, "k=q8_0,v=q4_0"), 53248, 1744830464ull);
}

TEST(DecideKvMemoryTest, LlamaCppPadsTheCacheTo256Cells) {
  // 1000 tokens -> 1024 cells (llama.cpp PR #17046): 69632 x 1024 = 71303168 B; per token the
  // cache over the context, padding included: ⌈71303168 / 1000⌉ = 71304.
  ExpectMemory(SettingsOf(E::kLlamaCpp, "k=q8_0,v=q8_0", testing::Llama3_8B(), 1000), 71304, 71303168ull);
}

TEST(DecideKvMemoryTest, IkLlamaCppCountsEachLayersOwnTypes) {
  // Layer 0 keeps f16 K (2048 B) and q8_0 V (1088 B); layers 1-31 q8_0 for both (2176 B):
  // 3136 + 31 x 2176 = 70592 B per token; x 32768 = 2313158656 B.
  ExpectMemory(SettingsOf(E::kIkLlamaCpp, "k=q8_0,v=q8_0;layers=0:k=f16"), 70592, 2313158656ull);
}

TEST(DecideKvMemoryTest, VllmFp8At32k) {
  // fp8: 1 B per element -> 1024 B for K and for V; 2048 B x 32 = 65536 B per token; 32768 tokens
  // = 2048 blocks of 16 exactly -> 2147483648 B; plus per-tensor scales: an f32 k_scale and
  // v_scale per layer = 2 x 4 x 32 = 256 B -> 2147483904 B (2 GiB + 256 B); per token the cache
  // over the context, scales included: ⌈2147483904 / 32768⌉ = 65537.
  ExpectMemory(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3"), 65537, 2147483904ull);
}

TEST(DecideKvMemoryTest, VllmRoundsUpToBlocksOf16Tokens) {
  // 1000 tokens -> 63 blocks = 1008 tokens: 65536 x 1008 + 256 = 66060544 B (66061 B per token).
  ExpectMemory(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3", testing::Llama3_8B(), 1000), 66061, 66060544ull);
}

TEST(DecideKvMemoryTest, VllmPerHeadScalesAndSkippedLayers) {
  // Layers 0-1 stay f16 (4096 B each), 30 layers fp8 (2048 B): 8192 + 61440 = 69632 B per token;
  // per-head scales of the 30 fp8 layers: 2 x 8 heads x 4 B x 30 = 1920 B.
  // 69632 x 32768 + 1920 = 2281703296 B (69633 B per token with the scales).
  ExpectMemory(SettingsOf(E::kVllm, "k=fp8_e4m3,v=fp8_e4m3,scale=calib,scale_by=head;layers=0-1:k=f16,v=f16"), 69633,
               2281703296ull);
}

TEST(DecideKvMemoryTest, SglangPagesOfOneTokenAndTensorRtLlmBlocksOf32) {
  // SGLang --page-size 1: 65536 x 1000 + 256 B of scales = 65536256 B (65537 B per token).
  ExpectMemory(SettingsOf(E::kSglang, "k=fp8_e4m3,v=fp8_e4m3", testing::Llama3_8B(), 1000), 65537, 65536256ull);
  // TensorRT-LLM tokens_per_block 32: 1000 -> 1024 tokens x 131072 B (f16) = 134217728 B (134218 per token).
  ExpectMemory(SettingsOf(E::kTensorRtLlm, "k=f16,v=f16", testing::Llama3_8B(), 1000), 134218, 134217728ull);
}

TEST(DecideKvMemoryTest, TransformersQuantoInt4) {
  // One token's K (or V) row of one head: 128 x 4 bits = 64 B of codes + 2 groups of 64 x
  // (2 B scale + 2 B zero-point) = 72 B; 2 x 32 x 8 = 512 rows -> 36864 B per token; with
  // residual_length=1 nothing stays in full precision between steps: x 32768 = 1207959552 B.
  ExpectMemory(SettingsOf(E::kTransformers, "k=int4,v=int4,recent=1"), 36864, 1207959552ull);
}

TEST(DecideKvMemoryTest, TransformersDynamicCacheInTheModelDtype) {
  // bf16: 512 rows x 256 B = 131072 B per token, no padding: x 1000 = 131072000 B.
  ExpectMemory(SettingsOf(E::kTransformers, "k=bf16,v=bf16", testing::Llama3_8B(), 1000), 131072, 131072000ull);
}

TEST(DecideKvMemoryTest, TheBundledShapeMatchesFormatsMd) {
  // kvq-code-16m, k=q8_0,v=q4_0: 8 layers x 2 heads x (68 + 36) B = 1664 B per token, the
  // bytes/token of docs/formats.md's k8v4 row; at 4096 tokens 6815744 B.
  ExpectMemory(SettingsOf(E::kLlamaCpp, "k=q8_0,v=q4_0", testing::Small64(), 4096), 1664, 6815744ull);
}

}  // namespace
}  // namespace kvaudit
