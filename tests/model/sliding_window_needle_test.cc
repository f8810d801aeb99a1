// A needle planted beyond a sliding layer's window is invisible to that layer and seen by the global
// ones, read from the engine's own attention: the value row of one position is shifted by +1 in
// every dimension in one layer only, so the layer's attention output for a later query moves by
// exactly a_j (the weight that query gives position j) in every dimension of every head that reads
// it — the query and keys are unchanged, the output is Σ a_t·v_t. On llama.cpp's tiny Gemma 2
// (window 8, layers 0 and 2 local, layer 1 global) and gpt-oss (the same pattern, with sinks):
//   - beyond the window (p − j ≥ 8): a_j = 0 exactly on the local layers (the output's bits do not
//     move) and > 0 on the global one, equal to the softmax computed here in double from the cache's
//     rows (with the sink in the denominator for gpt-oss);
//   - inside the window: > 0 on every layer, again equal to the double softmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "kv/attention/chunked_attention.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/llamacpp_golden.h"

namespace kvaudit {
namespace {

// An f32 cache whose layer `layer` stores v + 1 at position `needle`, and which keeps every layer's
// attention output of the query at position `query`: out[layer] = [n_heads, head_dim].
class PlantingCache final : public KvCache {
 public:
  PlantingCache(const ModelConfig& c, int layer, int needle, int query)
      : c_(c), inner_(MakeF32Cache(c, 256)), layer_(layer), needle_(needle), query_(query), out_(c.n_layers) {}

  void Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) override {
    std::vector<float> planted(v, v + static_cast<size_t>(n) * c_.kv_dim());  // [n, n_kv_heads, head_dim]
    if (layer == layer_ && needle_ >= pos0 && needle_ < pos0 + n) {
      float* row = planted.data() + static_cast<size_t>(needle_ - pos0) * c_.kv_dim();
      for (int i = 0; i < c_.kv_dim(); ++i) row[i] += 1.0f;
    }
    inner_->Append(layer, pos0, n, k, k_pre_rope, planted.data());
  }
  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    inner_->Attend(layer, pos0, n, q, out, pool);
    if (query_ >= pos0 && query_ < pos0 + n) {
      const float* row = out + static_cast<size_t>(query_ - pos0) * c_.q_dim();
      out_[layer].assign(row, row + c_.q_dim());
      const float* qrow = q + static_cast<size_t>(query_ - pos0) * c_.q_dim();
      q_[layer].assign(qrow, qrow + c_.q_dim());
    }
  }
  void Reset() override { inner_->Reset(); }
  Status Reserve(int n) override { return inner_->Reserve(n); }
  uint64_t bytes_per_token() const override { return inner_->bytes_per_token(); }
  uint64_t bytes_used() const override { return inner_->bytes_used(); }
  uint64_t bytes_reserved() const override { return inner_->bytes_reserved(); }
  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    return inner_->ReadRows(layer, g, p, t0, t1, k, v);
  }

  const std::vector<float>& out(int layer) const { return out_[layer]; }
  const std::vector<float>& q(int layer) const { return q_.at(layer); }

 private:
  const ModelConfig& c_;
  std::unique_ptr<KvCache> inner_;
  int layer_, needle_, query_;
  std::vector<std::vector<float>> out_;  // [n_layers][n_heads * head_dim]
  std::map<int, std::vector<float>> q_;  // layer -> [n_heads * head_dim]
};

struct Run {
  std::vector<float> out;  // the planted layer's attention output at the query
  std::vector<float> q;    // its query (after RoPE)
  std::unique_ptr<PlantingCache> cache;
};

// Runs ids[0..query] with (needle >= 0) or without (needle = -1) the planted row in `layer`.
Run RunPlanted(const Model& m, const std::vector<int32_t>& ids, int layer, int needle, int query) {
  ThreadPool pool(2);
  Run r;
  r.cache = std::make_unique<PlantingCache>(m.config(), layer, needle, query);
  Forward fwd(m, *r.cache, pool);
  std::vector<float> logits(m.config().vocab_size);
  fwd.Run(std::span<const int32_t>(ids.data(), query + 1), 0, logits.data(), false);
  r.out = r.cache->out(layer);
  r.q = r.cache->q(layer);
  return r;
}

// The weight query head h at position p gives key position j, in double from the cache's rows:
// the layer's scale, window and sinks (softcap where the model has one).
double SoftmaxWeight(const ModelConfig& c, const KvCache& cache, const float* q, int layer, int h, int p, int j) {
  const AttnShape s = AttnShapeFor(c, layer);
  const int g = h / s.group, first = FirstKey(s, p), hd = c.head_dim;
  if (j < first) return 0.0;
  std::vector<float> k(static_cast<size_t>(p + 1 - first) * hd), v(k.size());  // [keys, head_dim]
  EXPECT_TRUE(cache.ReadRows(layer, g, p, first, p + 1, k.data(), v.data()));
  std::vector<double> score(p + 1 - first);
  double mx = s.sinks ? s.sinks[h] : -INFINITY;
  for (int t = first; t <= p; ++t) {
    double d = 0;
    for (int i = 0; i < hd; ++i) d += static_cast<double>(q[h * hd + i]) * k[static_cast<size_t>(t - first) * hd + i];
    d *= s.scale;
    if (s.softcap > 0) d = std::tanh(d / s.softcap) * s.softcap;
    score[t - first] = d;
    mx = std::max(mx, d);
  }
  double z = s.sinks ? std::exp(s.sinks[h] - mx) : 0.0;
  for (double x : score) z += std::exp(x - mx);
  return std::exp(score[j - first] - mx) / z;
}

void CheckModel(const std::string& name) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden(name);
  ASSERT_EQ(g.ids.size(), 96u);
  auto model = Model::Load(g.dir + "/model.gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const Model& m = **model;
  const ModelConfig& c = m.config();
  ASSERT_EQ(c.sliding_window, 8);
  ASSERT_TRUE(c.is_sliding(0) && !c.is_sliding(1) && c.is_sliding(2));
  const int query = 60, hd = c.head_dim;
  for (const int needle : {40, 55}) {  // 20 positions back (beyond the window), 5 back (inside)
    const bool beyond = query - needle >= c.sliding_window;
    for (int layer = 0; layer < c.n_layers; ++layer) {
      const Run plain = RunPlanted(m, g.ids, layer, -1, query);
      const Run planted = RunPlanted(m, g.ids, layer, needle, query);
      ASSERT_EQ(plain.q, planted.q) << "the planted row must not reach this layer's query";
      const bool invisible = beyond && c.is_sliding(layer);
      if (invisible) {
        EXPECT_EQ(std::memcmp(plain.out.data(), planted.out.data(), plain.out.size() * 4), 0)
            << name << " layer " << layer << ": a sliding layer saw a needle beyond its window";
        continue;
      }
      for (int h = 0; h < c.n_heads; ++h) {
        double moved = 0;  // mean shift over the head's dimensions = a_j
        for (int i = 0; i < hd; ++i) moved += planted.out[h * hd + i] - plain.out[h * hd + i];
        moved /= hd;
        const double want = SoftmaxWeight(c, *plain.cache, plain.q.data(), layer, h, query, needle);
        EXPECT_GT(want, 1e-4) << name << " layer " << layer << " head " << h;
        EXPECT_NEAR(moved, want, 2e-5) << name << " layer " << layer << " head " << h << " needle " << needle;
      }
    }
  }
}

TEST(SlidingWindowNeedle, Gemma2LocalLayersCannotSeeBeyondTheirWindow) { CheckModel("gemma2"); }

TEST(SlidingWindowNeedle, GptOssLocalLayersCannotSeeBeyondTheirWindowWithSinks) { CheckModel("gpt-oss"); }

}  // namespace
}  // namespace kvaudit
