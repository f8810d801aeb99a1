// Prefill == decode (docs/formats.md) for KIVI and the llama.cpp emulation on the bundled model: a
// teacher-forced prefill (chunks 128, 128, 300) computes what token-by-token decode computes.
// Checked on the cache with the model's recorded q/k/v (both runs see identical inputs), and end to
// end (see the last test).
//   KIVI: bitwise (the store defines its full-precision residual as a function of the query
//   position, and prefill and decode make the same per-row store calls).
//   llama.cpp quantized formats: _one_chunk for prefill and decode, the same arithmetic per row:
//   bitwise (the forward pass is batch-invariant too).
//   llama.cpp f16: prefill runs the tiled path (f32 accumulation), decode the one-row path that sums
//   V in an fp16 accumulator rounded after every key and rounds Q to f16 — a real difference of
//   llama.cpp itself, ~2^-11 relative per step: not bitwise, so bounded by 1e-2 · max|out| on the
//   recorded activations (docs/architecture.md), and it must be nonzero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "kv/f32_cache.h"
#include "kv/make_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace kvaudit {
using ::kvaudit::testing::BundledModelDir;
using ::kvaudit::testing::Fixture;
namespace {

constexpr int kN = 556;  // 128 + 128 + 300

const Model& Bundled() { return testing::BundledModel(); }

const std::vector<int32_t>& Tokens() {
  static auto* t = [] {
    std::ifstream f(Fixture("data/public-kld.txt"));
    std::stringstream ss;
    ss << f.rdbuf();
    auto ids = Bundled().tokenizer()->Encode(ss.str().substr(0, 20000), true);
    KV_CHECK(static_cast<int>(ids.size()) >= kN);
    ids.resize(kN);
    return new std::vector<int32_t>(std::move(ids));
  }();
  return *t;
}

std::vector<float> Logits(const std::string& spec, const std::vector<int>& chunks) {
  const Model& m = Bundled();
  auto cache_config = CacheConfig::Parse(spec);
  KV_CHECK_MSG(cache_config.ok(), spec.c_str());
  auto cache = MakeCache(m.config(), cache_config.value(), nullptr, kN);
  KV_CHECK_MSG(cache.ok(), spec.c_str());
  ThreadPool pool(2);
  Forward fwd(m, *cache.value(), pool);
  const int V = m.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(kN) * V);
  int p = 0;
  for (int c : chunks) {
    fwd.Run(std::span<const int32_t>(Tokens().data() + p, c), p, logits.data() + static_cast<size_t>(p) * V, true);
    p += c;
  }
  KV_CHECK(p == kN);
  return logits;
}

struct Diff {
  double max_abs_diff, max_logit;
  bool same_bits;  // memcmp of the two float arrays
};
Diff Compare(const std::string& spec) {
  const auto prefill = Logits(spec, {128, 128, 300});
  const auto decode = Logits(spec, std::vector<int>(kN, 1));
  Diff d{0, 0, std::memcmp(prefill.data(), decode.data(), prefill.size() * sizeof(float)) == 0};
  for (size_t i = 0; i < prefill.size(); ++i) {
    d.max_abs_diff = std::max(d.max_abs_diff, static_cast<double>(std::fabs(prefill[i] - decode[i])));
    d.max_logit = std::max(d.max_logit, static_cast<double>(std::fabs(decode[i])));
  }
  std::printf("%-45s max|Δlogit| = %.3g  (max|logit| %.3g, ratio %.3g)\n", spec.c_str(), d.max_abs_diff, d.max_logit,
              d.max_abs_diff / d.max_logit);
  return d;
}

// Records every Append / Attend input of one f32 run of the model (the real activations), so the
// caches under test can be replayed on exactly the same q, k, v in prefill chunks and token by token.
class Recorder final : public KvCache {
 public:
  Recorder(const ModelConfig& c, int n)
      : c_(c), inner_(MakeF32Cache(c, n)), k_(c.n_layers), v_(c.n_layers), q_(c.n_layers) {}
  void Append(int layer, int pos0, int n, const float* k, const float* kp, const float* v) override {
    k_[layer].insert(k_[layer].end(), k, k + static_cast<size_t>(n) * c_.kv_dim());
    v_[layer].insert(v_[layer].end(), v, v + static_cast<size_t>(n) * c_.kv_dim());
    inner_->Append(layer, pos0, n, k, kp, v);
  }
  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    q_[layer].insert(q_[layer].end(), q, q + static_cast<size_t>(n) * c_.q_dim());
    inner_->Attend(layer, pos0, n, q, out, pool);
  }
  void Reset() override {}
  Status Reserve(int n) override { return inner_->Reserve(n); }
  uint64_t bytes_per_token() const override { return 0; }
  uint64_t bytes_used() const override { return 0; }
  uint64_t bytes_reserved() const override { return inner_->bytes_reserved(); }
  const ModelConfig& c_;
  std::unique_ptr<KvCache> inner_;
  std::vector<std::vector<float>> k_, v_, q_;  // [layer] of [kN, kv_dim] / [kN, q_dim]
};

const Recorder& Recorded() {
  static auto* r = [] {
    auto* rec = new Recorder(Bundled().config(), kN);
    ThreadPool pool(2);
    Forward fwd(Bundled(), *rec, pool);
    std::vector<float> logits(Bundled().config().vocab_size);
    fwd.Run(std::span<const int32_t>(Tokens().data(), kN), 0, logits.data(), false);
    return rec;
  }();
  return *r;
}

// Attention outputs of every layer [n_layers, kN, q_dim] for the recorded activations.
std::vector<float> Replay(const std::string& spec, const std::vector<int>& chunks) {
  const Recorder& rec = Recorded();
  const ModelConfig& c = Bundled().config();
  auto cache = MakeCache(c, CacheConfig::Parse(spec).value(), nullptr, kN);
  KV_CHECK_MSG(cache.ok(), spec.c_str());
  ThreadPool pool(2);
  std::vector<float> out(static_cast<size_t>(c.n_layers) * kN * c.q_dim());
  int p = 0;
  for (int n : chunks) {
    for (int l = 0; l < c.n_layers; ++l) {
      const float* k = rec.k_[l].data() + static_cast<size_t>(p) * c.kv_dim();
      cache.value()->Append(l, p, n, k, k, rec.v_[l].data() + static_cast<size_t>(p) * c.kv_dim());
      cache.value()->Attend(l, p, n, rec.q_[l].data() + static_cast<size_t>(p) * c.q_dim(),
                            out.data() + (static_cast<size_t>(l) * kN + p) * c.q_dim(), pool);
    }
    p += n;
  }
  return out;
}

Diff ReplayCompare(const std::string& spec) {
  const auto prefill = Replay(spec, {128, 128, 300});
  const auto decode = Replay(spec, std::vector<int>(kN, 1));
  Diff d{0, 0, std::memcmp(prefill.data(), decode.data(), prefill.size() * sizeof(float)) == 0};
  for (size_t i = 0; i < prefill.size(); ++i) {
    d.max_abs_diff = std::max(d.max_abs_diff, static_cast<double>(std::fabs(prefill[i] - decode[i])));
    d.max_logit = std::max(d.max_logit, static_cast<double>(std::fabs(decode[i])));
  }
  std::printf("replay %-38s max|Δout| = %.3g  (max|out| %.3g, ratio %.3g)\n", spec.c_str(), d.max_abs_diff, d.max_logit,
              d.max_abs_diff / d.max_logit);
  return d;
}

// The cache itself, on the model's real q/k/v: prefill chunks == token-by-token decode.
class CacheEquivalence : public ::testing::TestWithParam<const char*> {};
TEST_P(CacheEquivalence, PrefillEqualsDecodeOnRecordedActivations) {
  const Diff d = ReplayCompare(GetParam());
  EXPECT_TRUE(d.same_bits) << GetParam() << ": max|Δout| " << d.max_abs_diff << " of max|out| " << d.max_logit;
}
INSTANTIATE_TEST_SUITE_P(Bundled, CacheEquivalence,
                         ::testing::Values("k=kivi2,v=kivi2,group=32,recent=32", "k=kivi2,v=kivi2,group=32,recent=128",
                                           "k=kivi4,v=kivi4,group=32,recent=32", "k=kivi4,v=kivi4,group=32,recent=128",
                                           "k=q8_0,v=q8_0,engine=llama.cpp,rot=0",
                                           "k=q4_0,v=q4_0,engine=llama.cpp,rot=0", "k=q4_0,v=q4_0,engine=llama.cpp",
                                           "k=q4_1,v=q4_1,engine=llama.cpp", "k=q5_0,v=q5_0,engine=llama.cpp,rot=0",
                                           "k=q5_1,v=q5_1,engine=llama.cpp,rot=0", "k=iq4_nl,v=iq4_nl,engine=llama.cpp",
                                           "k=q8_0,v=q4_0,engine=llama.cpp"));

TEST(CacheEquivalenceF16, LlamaCppDecodeF16AccumulatorIsLooser) {
  const Diff d = ReplayCompare("k=f16,v=f16,engine=llama.cpp");
  EXPECT_LE(d.max_abs_diff, 1e-2 * d.max_logit);
  EXPECT_GT(d.max_abs_diff, 0.0);
}

// End to end through Forward: the engine's matmuls and attention are batch-invariant (one
// canonical order per output element, ops/matmul.h and kv/attention/chunked_attention.h), so prefill and
// decode see bitwise the same q/k/v and the caches above turn them into the same logits.
TEST(LogitsEquivalence, EndToEndPrefillEqualsDecode) {
  for (const char* spec : {"k=f32,v=f32", "k=kivi2,v=kivi2,group=32,recent=128", "k=q4_0,v=q4_0,engine=llama.cpp"}) {
    const Diff d = Compare(spec);
    EXPECT_TRUE(d.same_bits) << spec << ": max|Δlogit| " << d.max_abs_diff << " of max|logit| " << d.max_logit;
  }
}

}  // namespace
}  // namespace kvaudit
