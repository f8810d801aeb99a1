// The streaming fidelity runner on the bundled model. The caches here are a plain test-local f32
// cache (naive attention), so the runner is checked without depending on kv/: two identical
// caches must give KLD exactly 0 and full agreement; a cache that rounds values must not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "eval/runner.h"
#include "run/scorer.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

// K, V: [n_layers][max_pos, n_kv_heads, head_dim]. drop_bits > 0 zeroes that many low mantissa
// bits of every stored V value (a crude quantizer with a known, small error).
class NaiveCache : public KvCache {
 public:
  NaiveCache(const ModelConfig& c, int max_pos, int drop_bits)
      : c_(c),
        row_(static_cast<size_t>(c.n_kv_heads * c.head_dim)),
        drop_bits_(drop_bits),
        k_(static_cast<size_t>(c.n_layers), std::vector<float>(static_cast<size_t>(max_pos) * row_)),
        v_(k_) {}
  void Append(int layer, int pos0, int n, const float* k, const float*, const float* v) override {
    const size_t at = static_cast<size_t>(pos0) * row_, len = static_cast<size_t>(n) * row_;
    std::memcpy(k_[static_cast<size_t>(layer)].data() + at, k, len * sizeof(float));
    float* dst = v_[static_cast<size_t>(layer)].data() + at;
    for (size_t i = 0; i < len; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      bits &= ~((1u << drop_bits_) - 1u);
      std::memcpy(&dst[i], &bits, 4);
    }
  }
  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool&) override {
    const int hd = c_.head_dim, group = c_.n_heads / c_.n_kv_heads;
    const float* K = k_[static_cast<size_t>(layer)].data();
    const float* V = v_[static_cast<size_t>(layer)].data();
    std::vector<double> w;  // [p + 1] attention weights of one query head
    for (int i = 0; i < n; ++i) {
      const int p = pos0 + i;
      for (int h = 0; h < c_.n_heads; ++h) {
        const float* qh = q + (static_cast<size_t>(i) * c_.n_heads + h) * hd;
        const int kvh = h / group;
        w.assign(static_cast<size_t>(p) + 1, 0.0);
        double mx = -1e300, sum = 0;
        for (int t = 0; t <= p; ++t) {
          const float* kt = K + static_cast<size_t>(t) * row_ + static_cast<size_t>(kvh * hd);
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += static_cast<double>(qh[d]) * kt[d];
          w[static_cast<size_t>(t)] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, w[static_cast<size_t>(t)]);
        }
        for (double& x : w) sum += x = std::exp(x - mx);
        float* o = out + (static_cast<size_t>(i) * c_.n_heads + h) * hd;
        for (int d = 0; d < hd; ++d) {
          double acc = 0;
          for (int t = 0; t <= p; ++t)
            acc += w[static_cast<size_t>(t)] * V[static_cast<size_t>(t) * row_ + static_cast<size_t>(kvh * hd + d)];
          o[d] = static_cast<float>(acc / sum);
        }
      }
    }
  }
  void Reset() override {}
  Status Reserve(int) override { return Status::Ok(); }  // allocated whole at construction
  uint64_t bytes_per_token() const override { return c_.n_layers * row_ * 8; }
  uint64_t bytes_used() const override { return 0; }
  uint64_t bytes_reserved() const override { return 2 * k_.size() * k_[0].size() * sizeof(float); }

 private:
  const ModelConfig& c_;
  size_t row_;
  int drop_bits_;
  std::vector<std::vector<float>> k_, v_;
};

const Model& Bundled() { return testing::BundledModel(); }

std::vector<std::vector<int32_t>> TwoWindows(const Model& m) {
  std::vector<std::vector<int32_t>> w(2);
  const std::string text[2] = {"def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n",
                               "for i in range(10):\n    x = i * 3\n"};
  for (int i = 0; i < 2; ++i) w[static_cast<size_t>(i)] = m.tokenizer()->Encode(text[i], true);
  return w;
}

std::vector<WindowRecord> RunAll(const Model& m, std::vector<KvCache*> caches,
                                 const std::vector<std::vector<int32_t>>& w, std::vector<bool> skip, int score_from,
                                 int chunk) {
  ThreadPool pool(2);
  std::vector<WindowRecord> out;
  FidelityRunOptions o;
  o.score_from = score_from;
  o.chunk = chunk;
  Status s = RunFidelity(m, caches, pool, w, skip, o, [&](WindowRecord&& r) {
    out.push_back(std::move(r));
    return Status::Ok();
  });
  EXPECT_TRUE(s.ok());
  return out;
}

TEST(EvalRunnerTest, IdenticalCachesGiveZeroKldAndMatchScore) {
  const Model& m = Bundled();
  const auto windows = TwoWindows(m);
  NaiveCache base(m.config(), 64, 0), same(m.config(), 64, 0), rounded(m.config(), 64, 12);
  // chunk 7: several lockstep chunks per window, one of them partial.
  const auto recs = RunAll(m, {&base, &same, &rounded}, windows, {false, false}, 0, 7);
  ASSERT_EQ(recs.size(), 2u);
  ThreadPool pool(1);
  NaiveCache ref(m.config(), 64, 0);
  ScoreOptions so;
  so.chunk = 7;
  std::vector<double> score_nll;
  ScoreWindows(m, ref, pool, windows, so, [&](const ScoredPosition& p) { score_nll.push_back(p.nll); });
  size_t k = 0;
  double rounded_kld = 0;
  for (const WindowRecord& r : recs) {
    ASSERT_EQ(r.size(), windows[static_cast<size_t>(r.window)].size() - 1);
    for (size_t i = 0; i < r.size(); ++i, ++k) {
      EXPECT_EQ(r.configs[0].kld[i], 0.0);
      EXPECT_EQ(r.configs[0].top1[i], 1);
      EXPECT_EQ(r.configs[0].dp[i], 0.0);
      EXPECT_EQ(r.configs[0].nll[i], r.nll_base[i]);
      EXPECT_EQ(r.nll_base[i], score_nll[k]);  // the same NLL `kvaudit score` reports
      EXPECT_GE(r.configs[1].kld[i], 0.0);
      rounded_kld += r.configs[1].kld[i];
    }
  }
  EXPECT_GT(rounded_kld, 0.0);
}

TEST(EvalRunnerTest, ScoreFromAndSkip) {
  const Model& m = Bundled();
  const auto windows = TwoWindows(m);
  NaiveCache base(m.config(), 64, 0), rounded(m.config(), 64, 12);
  const auto all = RunAll(m, {&base, &rounded}, windows, {false, false}, 5, 512);
  const auto tail = RunAll(m, {&base, &rounded}, windows, {true, false}, 5, 4);  // chunks 0-3 skip the output head
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].window, 1);
  EXPECT_EQ(all[1].first_pos, 5);
  EXPECT_EQ(all[1].size(), windows[1].size() - 6);
  EXPECT_EQ(all[1].tokens[0], windows[1][6]);
  for (size_t i = 0; i < all[1].size(); ++i) {
    // Chunking changes the GEMM shapes, not the arithmetic per element beyond rounding.
    EXPECT_NEAR(tail[0].nll_base[i], all[1].nll_base[i], 1e-4);
    EXPECT_NEAR(tail[0].configs[0].kld[i], all[1].configs[0].kld[i], 1e-4);
  }
}

}  // namespace
}  // namespace kvaudit
