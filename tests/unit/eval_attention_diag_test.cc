// The attention-level diagnosis (docs/metrics.md) on synthetic K/V/Q: ReadRows gives every cache's
// rows in the model basis (rotation undone, pre-RoPE keys re-roped); an exact configuration reads
// as exactly zero error; a 4-bit configuration reads its known error band; sampled positions are
// deterministic, distinct and inside their buckets; sums do not depend on the thread count; and
// the resume log round-trips the cells bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "eval/attention_diag.h"
#include "eval/resume_log.h"
#include "kv/config/cache_config.h"
#include "kv/f32_cache.h"
#include "kv/make_cache.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

ModelConfig Tiny() {
  ModelConfig c;
  c.n_layers = 2;
  c.d_model = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.max_ctx = 512;
  c.rope.theta = 10000;
  return c;
}

std::unique_ptr<KvCache> Make(const ModelConfig& c, const std::string& spec, int max_pos) {
  auto p = CacheConfig::Parse(spec);
  EXPECT_TRUE(p.ok()) << spec;
  auto cache = MakeCache(c, p.value(), nullptr, max_pos);
  EXPECT_TRUE(cache.ok()) << spec << ": " << (cache.ok() ? "" : cache.error().message);
  return std::move(cache).value();
}

struct Data {
  std::vector<float> q, k, v;  // q [n, n_heads, hd]; k, v [n, n_kv, hd]
};
Data Random(const ModelConfig& c, int n, uint32_t seed) {
  testing::Rng rng(seed);
  Data d;
  d.q.resize(static_cast<size_t>(n) * c.q_dim());
  d.k.resize(static_cast<size_t>(n) * c.kv_dim());
  d.v.resize(d.k.size());
  for (float& f : d.q) f = rng.Normal();
  for (float& f : d.k) f = rng.Normal();
  for (float& f : d.v) f = rng.Normal();
  return d;
}

// Rows of (layer 0, head g) that the query at p reads, relative L2 error against the input.
double ReadBackRelErr(const KvCache& cache, const ModelConfig& c, const Data& d, int g, int p, bool keys) {
  std::vector<float> k(static_cast<size_t>(p + 1) * c.head_dim), v(k.size());
  EXPECT_TRUE(cache.ReadRows(0, g, p, 0, p + 1, k.data(), v.data()));
  double e = 0, r = 0;
  for (int t = 0; t <= p; ++t) {
    for (int i = 0; i < c.head_dim; ++i) {
      const float x = (keys ? d.k : d.v)[(static_cast<size_t>(t) * c.n_kv_heads + g) * c.head_dim + i];
      const float y = (keys ? k : v)[static_cast<size_t>(t) * c.head_dim + i];
      e += (static_cast<double>(y) - x) * (y - x), r += static_cast<double>(x) * x;
    }
  }
  return std::sqrt(e / r);
}

TEST(EvalAttentionDiag, ReadRowsIsInTheModelBasis) {
  const ModelConfig c = Tiny();
  const int n = 100;
  const Data d = Random(c, n, 3);
  // {spec, lower, upper} bounds of the relative error of K and V read back.
  struct Case {
    const char* spec;
    double lo, hi;
  };
  for (const Case cs :
       {Case{"k=f32,v=f32", 0, 0}, Case{"k=f16,v=f16", 1e-5, 1e-3}, Case{"k=q4_0,v=q4_0", 0.05, 0.2},
        Case{"k=q4_0,v=q4_0,rot=1", 0.05, 0.2}, Case{"k=q8_0,v=q8_0,engine=llama.cpp,rot=0", 1e-3, 1e-2},
        Case{"k=q4_0,v=q4_0,engine=llama.cpp", 0.05, 0.2}, Case{"k=kivi2,v=kivi2,recent=32", 0.1, 0.6},
        Case{"k=q4_0,v=q4_0,recent=200", 0, 0}}) {
    auto cache = Make(c, cs.spec, n);
    for (int l = 0; l < c.n_layers; ++l) cache->Append(l, 0, n, d.k.data(), d.k.data(), d.v.data());
    for (int g = 0; g < c.n_kv_heads; ++g) {
      for (bool keys : {true, false}) {
        const double e = ReadBackRelErr(*cache, c, d, g, n - 1, keys);
        EXPECT_GE(e, cs.lo) << cs.spec << (keys ? " K" : " V");
        EXPECT_LE(e, cs.hi) << cs.spec << (keys ? " K" : " V");
      }
    }
  }
}

std::vector<Bucket> Buckets() { return {{1, 16}, {17, 64}, {65, 200}}; }

// Runs n positions through a diagnosis with the given shadows in prefill chunks; returns the sums.
std::vector<std::vector<AttnCell>> Diagnose(const ModelConfig& c, const Data& d, int n,
                                            const std::vector<std::string>& specs, int threads, int samples) {
  auto base = MakeF32Cache(c, n);
  std::vector<std::unique_ptr<KvCache>> owned;
  std::vector<KvCache*> shadows;
  for (const std::string& s : specs) {
    owned.push_back(Make(c, s, n));
    shadows.push_back(owned.back().get());
  }
  AttentionDiagnosis diag(c, *base, shadows, Buckets(), samples);
  ThreadPool pool(threads);
  diag.BeginWindow(0, n);
  diag.Reset();
  std::vector<float> out(static_cast<size_t>(n) * c.q_dim());
  for (int t0 = 0; t0 < n; t0 += 64) {
    const int m = std::min(64, n - t0);
    for (int l = 0; l < c.n_layers; ++l) {
      diag.Append(l, t0, m, &d.k[t0 * c.kv_dim()], &d.k[t0 * c.kv_dim()], &d.v[t0 * c.kv_dim()]);
      diag.Attend(l, t0, m, &d.q[t0 * c.q_dim()], &out[t0 * c.q_dim()], pool);
    }
  }
  return diag.TakeWindow();
}

TEST(EvalAttentionDiag, ExactConfigurationReadsZeroAndFourBitReadsItsBand) {
  const ModelConfig c = Tiny();
  const int n = 200;
  const Data d = Random(c, n, 5);
  const auto cells = Diagnose(c, d, n, {"k=f32,v=f32", "k=q4_0,v=q4_0"}, 2, 12);
  ASSERT_EQ(cells.size(), 2u);
  std::vector<int> from;
  for (const Bucket& b : Buckets()) from.push_back(b.from);
  const auto exact = SummarizeAttention(cells[0], c.n_layers, c.n_kv_heads, from);
  const auto q4 = SummarizeAttention(cells[1], c.n_layers, c.n_kv_heads, from);
  ASSERT_EQ(exact.size(), 4u);
  ASSERT_EQ(q4.size(), 4u);
  for (const AttnSummary& s : exact) {
    EXPECT_EQ(s.queries, 12 * 2);  // 12 positions x 2 query heads per KV head
    EXPECT_EQ(s.k_rel_err, 0.0);
    EXPECT_EQ(s.v_rel_err, 0.0);
    EXPECT_EQ(s.attn_kl, 0.0);
    // The shadow attends decode-style, the baseline in prefill: batch-invariant kernels make
    // them bitwise equal.
    EXPECT_EQ(s.out_rel_err, 0.0);
    EXPECT_EQ(s.sink_moved, 0.0);
    EXPECT_GT(s.sink_mass, 0.0);
    EXPECT_EQ(s.buckets.size(), 3u);
  }
  for (const AttnSummary& s : q4) {
    EXPECT_GT(s.k_rel_err, 0.05);
    EXPECT_LT(s.k_rel_err, 0.2);
    EXPECT_GT(s.v_rel_err, 0.05);
    EXPECT_LT(s.v_rel_err, 0.2);
    EXPECT_GT(s.attn_kl, 0.0);
    EXPECT_LT(s.attn_kl, 0.1);
    EXPECT_GT(s.attn_tv, 0.0);
    EXPECT_GT(s.out_rel_err, 0.01);
    EXPECT_LT(s.out_rel_err, 0.5);
  }
  const auto worst = WorstHeads(q4, 2);
  ASSERT_EQ(worst.size(), 2u);
  EXPECT_GE(worst[0].out_rel_err, worst[1].out_rel_err);
}

TEST(EvalAttentionDiag, SumsDoNotDependOnThreads) {
  const ModelConfig c = Tiny();
  const Data d = Random(c, 150, 9);
  const auto a = Diagnose(c, d, 150, {"k=q4_0,v=q8_0,rot=1", "k=kivi2,v=kivi2"}, 1, 9);
  const auto b = Diagnose(c, d, 150, {"k=q4_0,v=q8_0,rot=1", "k=kivi2,v=kivi2"}, 2, 9);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    for (size_t i = 0; i < a[k].size(); ++i) {
      EXPECT_EQ(a[k][i].k_err2, b[k][i].k_err2);
      EXPECT_EQ(a[k][i].kl, b[k][i].kl);
      EXPECT_EQ(a[k][i].out_err2, b[k][i].out_err2);
      EXPECT_EQ(a[k][i].queries, b[k][i].queries);
    }
  }
}

TEST(EvalAttentionDiag, SampledPositionsAreStratifiedAndDeterministic) {
  const auto buckets = Buckets();
  const auto p = SampleQueryPositions(150, buckets, 12, 4);
  EXPECT_EQ(p, SampleQueryPositions(150, buckets, 12, 4));
  EXPECT_NE(p, SampleQueryPositions(150, buckets, 12, 5));
  ASSERT_EQ(p.size(), 12u);  // 4 per reached bucket
  EXPECT_EQ(std::set<int>(p.begin(), p.end()).size(), p.size());
  int per[3] = {0, 0, 0};
  for (int x : p) {
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 150);  // the window runs positions [0, 150)
    per[BucketIndex(buckets, x + 1)]++;
  }
  EXPECT_EQ(per[0], 4);
  EXPECT_EQ(per[1], 4);
  EXPECT_EQ(per[2], 4);
  // A short window reaches one bucket: it takes all its samples there; tiny buckets are taken whole.
  EXPECT_EQ(SampleQueryPositions(10, buckets, 12, 0).size(), 10u);
  EXPECT_TRUE(SampleQueryPositions(150, buckets, 0, 0).empty());
}

TEST(EvalAttentionDiag, ResumeLogRoundTripsCells) {
  WindowRecord rec;
  rec.window = 3;
  rec.first_pos = 0;
  rec.tokens = {1, 2};
  rec.nll_base = {0.5, 0.25};
  rec.configs.resize(1);
  rec.configs[0] = {{0.1, 0.2}, {0.6, 0.3}, {0.01, -0.02}, {1, 0}, {0, 1}};
  rec.attention.assign(1, std::vector<AttnCell>(6));
  rec.attention[0][4] = {0.1, 2.0 / 3.0, 3e-17, 4.0, 5.5, 6.25, 1e-9, 0.125, 0.75, 0.0625, 7};
  const nlohmann::json j = nlohmann::json::parse(WindowToJson(rec).dump());
  auto back = WindowFromJson(j, 1, 6);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->attention.size(), 1u);
  const AttnCell& a = back->attention[0][4];
  EXPECT_EQ(a.k_ref2, 2.0 / 3.0);
  EXPECT_EQ(a.v_err2, 3e-17);
  EXPECT_EQ(a.kl, 1e-9);
  EXPECT_EQ(a.queries, 7);
  EXPECT_EQ(back->attention[0][0].queries, 0);
  EXPECT_FALSE(WindowFromJson(j, 1, 4).ok());  // cell index out of range for the expected layout
  EXPECT_FALSE(WindowFromJson(j, 1, 0).ok());  // a record with cells where none are expected
}

}  // namespace
}  // namespace kvaudit
