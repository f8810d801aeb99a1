// Cache memory follows use (docs/architecture.md "Cache memory"), on the bundled model: a short
// generation holds cache storage for the tokens it used (one chunk of 256 positions), not for the
// model's 4096-token context — through the path `kvaudit generate` takes: MakeCache with the
// context as the hard limit, Reserve for prompt + max_tokens, prefill, then token-by-token decode.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "kv/make_cache.h"
#include "kv/store/chunked_rows.h"
#include "model/forward.h"
#include "model/model.h"
#include "run/cache_generator.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

const Model& Bundled() { return testing::BundledModel(); }

struct Generated {
  std::unique_ptr<KvCache> cache;
  std::vector<int32_t> tokens;
};

Generated Generate(const std::string& spec, int max_tokens, bool reserve) {
  const ModelConfig& c = Bundled().config();
  auto cache_config = CacheConfig::Parse(spec);
  EXPECT_TRUE(cache_config.ok()) << spec;
  auto cache = MakeCache(c, *cache_config, nullptr, c.max_ctx);
  EXPECT_TRUE(cache.ok()) << spec;
  Generated g{std::move(*cache), {}};
  const Tokenizer& tok = *Bundled().tokenizer();
  const std::vector<int32_t> prompt = tok.Encode("def fibonacci(n):", tok.add_bos_default());
  if (reserve) {
    EXPECT_TRUE(g.cache->Reserve(static_cast<int>(prompt.size()) + max_tokens).ok());
  }
  ThreadPool pool(2);
  CacheGenerator gen(Bundled(), *g.cache, pool);
  SamplingParams greedy;
  greedy.temperature = 0;
  g.tokens = gen.Generate(prompt, max_tokens, greedy);
  return g;
}

class ShortGenerate : public ::testing::TestWithParam<std::string> {};

TEST_P(ShortGenerate, HoldsOneChunkNotTheWholeContext) {
  const ModelConfig& c = Bundled().config();
  ASSERT_EQ(c.max_ctx, 4096);
  const Generated g = Generate(GetParam(), 64, /*reserve=*/true);
  ASSERT_FALSE(g.tokens.empty());
  // One chunk of every (layer, KV head, K and V) store and of its f32 ring (KIVI's residual):
  // what a fresh cache holds after Reserve(256), whatever the format.
  const auto held_for = [&](int n) {
    auto fresh = MakeCache(c, CacheConfig::Parse(GetParam()).value(), nullptr, c.max_ctx);
    EXPECT_TRUE(fresh.ok() && (*fresh)->Reserve(n).ok());
    return (*fresh)->bytes_reserved();
  };
  EXPECT_EQ(g.cache->bytes_reserved(), held_for(kCacheChunk));
  // A cache for the whole context would hold 32 MiB for f32, 16× this.
  EXPECT_LT(g.cache->bytes_reserved() * 4, held_for(c.max_ctx));
}

TEST_P(ShortGenerate, ReservedAndGrownCachesGenerateTheSameTokens) {
  const Generated reserved = Generate(GetParam(), 40, true);
  const Generated grown = Generate(GetParam(), 40, false);
  EXPECT_EQ(reserved.tokens, grown.tokens);
  EXPECT_EQ(reserved.cache->bytes_reserved(), grown.cache->bytes_reserved());
}

INSTANTIATE_TEST_SUITE_P(Formats, ShortGenerate,
                         ::testing::Values("k=f32,v=f32", "k=q4_0,v=q4_0", "kv=kivi2",
                                           "k=q8_0,v=q8_0,engine=llama.cpp"),
                         [](const auto& info) {
                           std::string s;
                           for (char ch : info.param) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

TEST(ShortGenerate, F32HoldsTwoMebibytesInsteadOf32) {
  const Generated g = Generate("k=f32,v=f32", 64, true);
  EXPECT_EQ(g.cache->bytes_reserved(), uint64_t{2} << 20);  // 256 positions × 8 KiB
  EXPECT_EQ(g.cache->bytes_per_token() * 4096, uint64_t{32} << 20);
}

// A job plans its memory from Forward::ActivationBytes before it builds a Forward (eval's
// configuration groups, eval/config_groups.h): the figure is what one holds.
TEST(ForwardMemory, ActivationBytesAreTheBuffersAForwardHolds) {
  const ModelConfig& c = Bundled().config();
  auto cache = MakeCache(c, CacheConfig::Parse("k=q8_0,v=q8_0").value(), nullptr, 256);
  ASSERT_TRUE(cache.ok());
  ThreadPool pool(1);
  const Forward fwd(Bundled(), **cache, pool);
  EXPECT_EQ(fwd.activation_bytes(), Forward::ActivationBytes(c));
  // (3 d_model + 3 q_dim + 5 kv_dim + 3 d_ff) · 512 · 4 (docs/architecture.md "Peak memory of the jobs")
  const uint64_t docs = (3ull * c.d_model + 3ull * c.q_dim() + 5ull * c.kv_dim() + 3ull * c.d_ff) * 512 * 4;
  EXPECT_EQ(Forward::ActivationBytes(c), docs);
}

}  // namespace
}  // namespace kvaudit
