// Cache memory follows use (docs/architecture.md "Cache memory"), for every kind of cache (f32, row
// stores with protections, KIVI, pre-RoPE keys, the llama.cpp emulation): building a cache
// allocates nothing per position, Append grows storage in whole chunks, Reset keeps it, Reserve
// holds what Append would, a reservation the machine cannot hold is an error (exit 2) before
// anything is allocated, and reserved and grown caches give the same bits.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kv/f32_cache.h"
#include "kv/make_cache.h"
#include "kv/store/chunked_rows.h"

namespace kvaudit {
namespace {

constexpr int kHuge = 2147483647;  // max_positions of a model with an absurd context

ModelConfig Tiny() {  // 2 layers, GQA 6 / 2 heads, head_dim 64 (what every format's blocks divide)
  ModelConfig c;
  c.n_layers = c.n_kv_heads = 2;
  c.d_model = c.head_dim = 64;
  c.n_heads = 6;
  return c;
}

std::unique_ptr<KvCache> Make(const std::string& spec, int max_pos) {
  if (spec == "f32") return MakeF32Cache(Tiny(), max_pos);
  auto cache_config = CacheConfig::Parse(spec);
  EXPECT_TRUE(cache_config.ok()) << spec;
  auto cache = MakeCache(Tiny(), *cache_config, nullptr, max_pos);
  EXPECT_TRUE(cache.ok()) << spec << ": " << cache.error().message;
  return std::move(*cache);
}

struct Inputs {
  std::vector<float> q, k, v;  // q [n, n_heads, hd]; k, v [n, n_kv, hd]
};
Inputs Random(int n) {
  const ModelConfig c = Tiny();
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  Inputs x;
  x.q.resize(static_cast<size_t>(n) * c.q_dim());
  x.k.resize(static_cast<size_t>(n) * c.kv_dim());
  x.v.resize(x.k.size());
  for (auto* vec : {&x.q, &x.k, &x.v})
    for (float& f : *vec) f = nd(rng);
  return x;
}

// Positions [from, to) of every layer: a prefill call of up to 200 tokens, then one token at a
// time. Returns layer 1's attention outputs [to - from, n_heads, hd].
std::vector<float> RunPositions(KvCache& cache, const Inputs& x, int from, int to) {
  const ModelConfig c = Tiny();
  const int64_t qd = c.q_dim(), kvd = c.kv_dim();
  ThreadPool pool(2);
  std::vector<float> out(static_cast<size_t>(to - from) * qd), scratch(out.size());
  for (int t0 = from; t0 < to;) {
    const int m = t0 == from ? std::min(200, to - t0) : 1;
    for (int l = 0; l < c.n_layers; ++l) {
      const float* k = x.k.data() + t0 * kvd;
      cache.Append(l, t0, m, k, k, x.v.data() + t0 * kvd);
      float* o = (l == 1 ? out.data() : scratch.data()) + (t0 - from) * qd;
      cache.Attend(l, t0, m, x.q.data() + t0 * qd, o, pool);
    }
    t0 += m;
  }
  return out;
}

class CacheMemory : public ::testing::TestWithParam<std::string> {};

TEST_P(CacheMemory, BuildingAllocatesNothingPerPosition) {
  // A whole-context allocation here would be terabytes.
  auto cache = Make(GetParam(), kHuge);
  // At most the sink rows (4 per store: 8 KiB here) and one position of the pre-RoPE table.
  EXPECT_LE(cache->bytes_reserved(), uint64_t{9} << 10);
  EXPECT_GT(cache->bytes_per_token(), 0u);
}

TEST_P(CacheMemory, AppendGrowsInWholeChunksAndResetKeepsThem) {
  const Inputs x = Random(2 * kCacheChunk + 1);
  auto cache = Make(GetParam(), kHuge);
  const uint64_t fixed = cache->bytes_reserved();
  RunPositions(*cache, x, 0, 64);  // KIVI allocates key chunks when its first group (<= 64) completes
  const uint64_t one = cache->bytes_reserved();
  EXPECT_GT(one, fixed);
  RunPositions(*cache, x, 64, kCacheChunk);
  EXPECT_EQ(cache->bytes_reserved(), one) << "positions [0, 256) are one chunk";
  RunPositions(*cache, x, kCacheChunk, kCacheChunk + 1);
  const uint64_t two = cache->bytes_reserved();
  EXPECT_GT(two, one);
  cache->Reset();
  EXPECT_EQ(cache->bytes_reserved(), two) << "Reset keeps the allocation";
  RunPositions(*cache, x, 0, kCacheChunk + 1);
  EXPECT_EQ(cache->bytes_reserved(), two) << "the next window reuses it";
}

TEST_P(CacheMemory, ReserveHoldsWhatAppendWouldAndGivesTheSameBits) {
  const int n = 2 * kCacheChunk + 40;
  const Inputs x = Random(n);
  auto grown = Make(GetParam(), kHuge);
  auto reserved = Make(GetParam(), kHuge);
  ASSERT_TRUE(reserved->Reserve(n).ok());
  const uint64_t held = reserved->bytes_reserved();
  const auto a = RunPositions(*grown, x, 0, n);
  const auto b = RunPositions(*reserved, x, 0, n);
  EXPECT_EQ(reserved->bytes_reserved(), held) << "Append below the reservation allocates nothing";
  EXPECT_EQ(grown->bytes_reserved(), held);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(grown->bytes_used(), reserved->bytes_used());
}

TEST_P(CacheMemory, ReservationTheMachineCannotHoldIsAnError) {
  auto cache = Make(GetParam(), kHuge);
  const uint64_t before = cache->bytes_reserved();
  const Status s = cache->Reserve(kHuge);  // ~ 2^31 × ≥ 0.4 KiB per token: hundreds of GiB or more
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().exit_code(), 2);
  EXPECT_EQ(s.error().message.rfind("KV cache for 2147483647 tokens needs ", 0), 0u) << s.error().message;
  EXPECT_EQ(cache->bytes_reserved(), before) << "nothing allocated";
  EXPECT_TRUE(cache->Reserve(kCacheChunk).ok()) << "a reservation that fits still works";
}

INSTANTIATE_TEST_SUITE_P(Kinds, CacheMemory,
                         ::testing::Values("f32", "k=f32,v=f32", "k=q4_0,v=q8_0", "k=q4_0,v=q4_0,sink=4,recent=64",
                                           "k=int4,v=q4_0,prerope=1", "kv=kivi2", "k=kivi4,v=kivi4,group=16,recent=32",
                                           "k=q4_0,v=q4_0,engine=llama.cpp", "k=f16,v=f16,engine=llama.cpp"),
                         [](const auto& info) {
                           std::string s;
                           for (char ch : info.param) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

TEST(CacheMemory, F32HoldsExactlyItsChunks) {
  const ModelConfig c = Tiny();
  const uint64_t chunk = uint64_t{kCacheChunk} * c.head_dim * sizeof(float);  // one (layer, head, K or V)
  const uint64_t per_chunk = chunk * 2 * c.n_layers * c.n_kv_heads;
  auto cache = MakeF32Cache(c, 4096);
  EXPECT_EQ(cache->bytes_reserved(), 0u);
  RunPositions(*cache, Random(300), 0, 300);
  EXPECT_EQ(cache->bytes_reserved(), 2 * per_chunk);
  EXPECT_EQ(cache->bytes_used(), 300 * cache->bytes_per_token());
  ASSERT_TRUE(cache->Reserve(1000).ok());
  EXPECT_EQ(cache->bytes_reserved(), 4 * per_chunk);
}

// ReadRows (the attention diagnosis) across chunk boundaries returns the appended rows exactly.
TEST(CacheMemory, F32ReadRowsAcrossChunks) {
  const ModelConfig c = Tiny();
  const int n = 600, hd = c.head_dim;
  const Inputs x = Random(n);
  auto cache = MakeF32Cache(c, n);
  RunPositions(*cache, x, 0, n);
  std::vector<float> k(static_cast<size_t>(n) * hd), v(k.size());
  ASSERT_TRUE(cache->ReadRows(1, 1, n - 1, 5, n, k.data(), v.data()));
  for (int t = 5; t < n; ++t) {
    const float* kt = x.k.data() + (static_cast<size_t>(t) * c.n_kv_heads + 1) * hd;
    const float* vt = x.v.data() + (static_cast<size_t>(t) * c.n_kv_heads + 1) * hd;
    ASSERT_EQ(std::memcmp(k.data() + (t - 5) * hd, kt, hd * sizeof(float)), 0) << t;
    ASSERT_EQ(std::memcmp(v.data() + (t - 5) * hd, vt, hd * sizeof(float)), 0) << t;
  }
}

}  // namespace
}  // namespace kvaudit
