// The f32 cache's attention (the prefill and decode splits of kv/attention/chunked_attention.h) against a naive
// double-precision reference, with GQA, sliding windows, and thread-count independence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kv/attention/f32_attention.h"
#include "kv/f32_cache.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

ModelConfig TinyConfig(int window) {
  ModelConfig c;
  c.n_layers = 2;
  c.d_model = 64;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 24;  // not a multiple of 16: exercises masked tails
  c.sliding_window = window;
  return c;
}

// Reference output for all n tokens, from the full K/V [n_kv, n, hd] and q [n, n_heads, hd].
std::vector<float> Reference(const ModelConfig& c, const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, int n) {
  const int G = c.n_heads / c.n_kv_heads, hd = c.head_dim;
  AttnShape s{hd, G, c.sliding_window, 1.0f / std::sqrt(static_cast<float>(hd))};
  std::vector<float> out(q.size());
  for (int g = 0; g < c.n_kv_heads; ++g) {
    std::vector<float> qs(static_cast<size_t>(n) * G * hd), o(qs.size());
    for (int t = 0; t < n; ++t)
      for (int j = 0; j < G; ++j)
        for (int d = 0; d < hd; ++d) qs[(t * G + j) * hd + d] = q[(t * c.n_heads + g * G + j) * hd + d] * s.scale;
    // keys of head g in [pos, hd] layout
    std::vector<float> kg(static_cast<size_t>(n) * hd), vg(kg.size());
    for (int t = 0; t < n; ++t)
      for (int d = 0; d < hd; ++d) {
        kg[t * hd + d] = k[(t * c.n_kv_heads + g) * hd + d];
        vg[t * hd + d] = v[(t * c.n_kv_heads + g) * hd + d];
      }
    AttendRef(s, qs.data(), n, 0, kg.data(), vg.data(), o.data());
    for (int t = 0; t < n; ++t)
      for (int j = 0; j < G; ++j) std::memcpy(&out[(t * c.n_heads + g * G + j) * hd], &o[(t * G + j) * hd], hd * 4);
  }
  return out;
}

class F32CacheTest : public ::testing::TestWithParam<int> {};  // param: sliding window

TEST_P(F32CacheTest, PrefillAndDecodeMatchReference) {
  const ModelConfig c = TinyConfig(GetParam());
  const int n = 700, hd = c.head_dim;
  testing::Rng rng(11);
  std::vector<float> q(static_cast<size_t>(n) * c.n_heads * hd), k(static_cast<size_t>(n) * c.n_kv_heads * hd),
      v(k.size());
  for (float& x : q) x = rng.Normal(2.0f);
  for (float& x : k) x = rng.Normal();
  for (float& x : v) x = rng.Normal();
  const auto ref = Reference(c, q, k, v, n);

  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto cache = MakeF32Cache(c, n);
    EXPECT_EQ(cache->bytes_per_token(), 2u * 2 * 2 * 24 * 4);
    // Prefill 600 tokens in two uneven calls, then decode the rest one (and three) at a time.
    std::vector<float> out(q.size());
    const size_t qrow = c.n_heads * hd, krow = c.n_kv_heads * hd;
    auto run = [&](int p0, int m) {
      cache->Append(1, p0, m, &k[p0 * krow], &k[p0 * krow], &v[p0 * krow]);
      cache->Attend(1, p0, m, &q[p0 * qrow], &out[p0 * qrow], pool);
    };
    run(0, 333);
    run(333, 267);
    for (int p = 600; p < 690; ++p) run(p, 1);
    run(690, 3);
    run(693, 7);
    double max_err = 0;
    for (size_t i = 0; i < out.size(); ++i)
      max_err = std::max(max_err, std::fabs(static_cast<double>(out[i]) - ref[i]));
    EXPECT_LT(max_err, 2e-5) << "threads " << threads;
    EXPECT_EQ(cache->bytes_used(), static_cast<uint64_t>(n) * 2 * krow * 4);

    static std::vector<float> first;
    if (threads == 1)
      first = out;
    else
      EXPECT_EQ(std::memcmp(first.data(), out.data(), out.size() * 4), 0) << "not bitwise thread-independent";
    cache->Reset();
    EXPECT_EQ(cache->bytes_used(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, F32CacheTest, ::testing::Values(0, 100, 300));

// The grouped decode kernel the f32 cache uses is a loop interchange of AttendChunk: bitwise equal.
TEST(F32Attention, ChunkGroupedIsBitwiseAttendChunk) {
  for (int window : {0, 50}) {
    const AttnShape s{24, 3, window, 1.0f / std::sqrt(24.0f)};
    const int n_keys = 300, n_tok = 3, pos0 = 297, rows = n_tok * s.group;
    testing::Rng rng(5);
    std::vector<float> k(static_cast<size_t>(n_keys) * s.head_dim), v(k.size()),
        q(static_cast<size_t>(rows) * s.head_dim);
    for (float& x : k) x = rng.Normal();
    for (float& x : v) x = rng.Normal();
    for (float& x : q) x = rng.Normal();
    for (auto [k0, k1] : {std::pair{0, 256}, std::pair{256, 300}, std::pair{290, 298}}) {
      std::vector<float> o1(q.size(), 7.0f), o2(q.size(), 9.0f), sc1(k1 - k0),
          sc2(static_cast<size_t>(s.group) * (k1 - k0));
      std::vector<PartialRow> p1(rows), p2(rows);
      const float* kc = k.data() + static_cast<int64_t>(k0) * s.head_dim;  // the chunk's rows, from k0
      const float* vc = v.data() + static_cast<int64_t>(k0) * s.head_dim;
      AttendChunk(s, q.data(), n_tok, pos0, kc, vc, k0, k1, o1.data(), p1.data(), sc1.data());
      AttendChunkGrouped(s, q.data(), n_tok, pos0, kc, vc, k0, k1, o2.data(), p2.data(), sc2.data());
      EXPECT_EQ(std::memcmp(o1.data(), o2.data(), o1.size() * 4), 0) << "window " << window << " k0 " << k0;
      EXPECT_EQ(std::memcmp(p1.data(), p2.data(), p1.size() * sizeof(PartialRow)), 0)
          << "window " << window << " k0 " << k0;
    }
  }
}

}  // namespace
}  // namespace kvaudit
