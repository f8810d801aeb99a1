// The quantized cache on synthetic K/V/Q (no model): f32 rows are bit-identical to the f32
// reference cache; the store kernels (prefill and decode splits with a moving window) agree
// with the f32 kernels on exact rows; rotation is exact; results do not depend on thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kv/f32_cache.h"
#include "kv/quant_cache.h"
#include "kv/store/row_store.h"
#include "ops/hadamard.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

ModelConfig Tiny(int window = 0) {
  ModelConfig c;
  c.n_layers = 1;
  c.d_model = 64;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.sliding_window = window;
  return c;
}

struct Qkv {
  std::vector<float> q, k, v;  // q [n, n_heads, hd]; k, v [n, n_kv, hd]
};
Qkv Random(const ModelConfig& c, int n, uint32_t seed) {
  testing::Rng rng(seed);
  Qkv x;
  x.q.resize(static_cast<size_t>(n) * c.n_heads * c.head_dim);
  x.k.resize(static_cast<size_t>(n) * c.n_kv_heads * c.head_dim);
  x.v.resize(x.k.size());
  for (float& f : x.q) f = rng.Normal();
  for (float& f : x.k) f = rng.Normal();
  for (float& f : x.v) f = rng.Normal();
  return x;
}

// Runs positions [0, n) through the cache: in prefill calls of `chunk` tokens (chunk > 4), or one
// token at a time (chunk = 1). Returns out [n, n_heads, hd].
std::vector<float> RunCache(KvCache& cache, const ModelConfig& c, const Qkv& x, int n, int chunk, int threads) {
  ThreadPool pool(threads);
  const int64_t qd = c.q_dim(), kvd = c.kv_dim();
  std::vector<float> out(static_cast<size_t>(n) * qd);
  cache.Reset();
  for (int t0 = 0; t0 < n; t0 += chunk) {
    const int m = std::min(chunk, n - t0);
    cache.Append(0, t0, m, x.k.data() + t0 * kvd, x.k.data() + t0 * kvd, x.v.data() + t0 * kvd);
    cache.Attend(0, t0, m, x.q.data() + t0 * qd, out.data() + t0 * qd, pool);
  }
  return out;
}

double MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double mx = 0, md = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::fabs(static_cast<double>(a[i])));
    md = std::max(md, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return md / mx;
}

CacheConfig Policy(const std::string& spec) {
  auto p = CacheConfig::Parse(spec);
  EXPECT_TRUE(p.ok()) << spec;
  return std::move(p).value();
}

// A row store hidden behind the plain TensorStore interface, so attention takes the store kernels.
class Opaque final : public TensorStore {
 public:
  // window > 0: report rows within `window` of the query as unstable, forcing the per-query path.
  Opaque(std::unique_ptr<TensorStore> s, int window) : s_(std::move(s)), window_(window) {}
  void Append(int pos0, int n, const float* r, int64_t st, const float* pre, int64_t ps) override {
    s_->Append(pos0, n, r, st, pre, ps);
  }
  void Reset() override { s_->Reset(); }
  int size() const override { return s_->size(); }
  int StableEnd(int p) const override {
    return window_ > 0 ? std::min(s_->StableEnd(p), std::max(0, p - window_ + 1)) : s_->StableEnd(p);
  }
  void Materialize(int p, int t0, int t1, float* out) const override { s_->Materialize(p, t0, t1, out); }
  void Dot(const float* q, int p, int t0, int t1, float* out) const override { s_->Dot(q, p, t0, t1, out); }
  void WeightedSum(const float* w, int p, int t0, int t1, float* acc) const override {
    s_->WeightedSum(w, p, t0, t1, acc);
  }
  uint64_t BytesFor(int n) const override { return s_->BytesFor(n); }
  bool Reserve(int n) override { return s_->Reserve(n); }
  uint64_t bytes_reserved() const override { return s_->bytes_reserved(); }
  uint64_t StorageFor(int n) const override { return s_->StorageFor(n); }

 private:
  std::unique_ptr<TensorStore> s_;
  int window_;
};

// Exact f32 rows under whatever configuration (rotation, windows) the spec names, through the store kernels.
std::unique_ptr<TensorStore> OpaqueF32(const StoreSpec& s) {
  StoreSpec f = s;
  f.head.k = f.head.v = KvFormat::kF32;
  return std::make_unique<Opaque>(MakeRowStore(f), 100);
}

class QuantCacheWindows : public ::testing::TestWithParam<int> {};

TEST_P(QuantCacheWindows, F32IsBitIdenticalToTheReferenceCache) {
  const ModelConfig c = Tiny(GetParam());
  const int n = 600;
  const Qkv x = Random(c, n, 1);
  auto ref = MakeF32Cache(c, n);
  auto qc = MakeQuantCache(c, Policy("k=f32,v=f32"), nullptr, n, MakeRowStore);
  for (int chunk : {1, 3, 200, 512}) {
    const auto a = RunCache(*ref, c, x, n, chunk, 2), b = RunCache(*qc, c, x, n, chunk, 2);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << chunk;
  }
  EXPECT_EQ(qc->bytes_per_token(), ref->bytes_per_token());
  EXPECT_EQ(qc->bytes_used(), ref->bytes_used());
}

TEST_P(QuantCacheWindows, StoreKernelsMatchF32Kernels) {
  // Exact rows through the store kernels, with a window moving through prefill chunks and a
  // rotation that must cancel: the same attention as the f32 cache up to rounding.
  const ModelConfig c = Tiny(GetParam());
  const int n = 600;
  const Qkv x = Random(c, n, 2);
  auto ref = MakeF32Cache(c, n);
  auto qc = MakeQuantCache(c, Policy("k=q4_0,v=q4_0,recent=100,sink=3,rot=1"), nullptr, n, OpaqueF32);
  const auto want = RunCache(*ref, c, x, n, 512, 1);
  for (int chunk : {1, 4, 64, 300, 512}) {
    EXPECT_LE(MaxRelDiff(want, RunCache(*qc, c, x, n, chunk, 2)), 2e-6) << chunk;
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, QuantCacheWindows, ::testing::Values(0, 150));

TEST(QuantCache, PrefillEqualsDecodeAndThreadsDoNotMatter) {
  const ModelConfig c = Tiny();
  const int n = 300;
  const Qkv x = Random(c, n, 3);
  for (const char* spec :
       {"k=q4_0,v=q4_0", "k=q4_0,v=q8_0,recent=64,sink=4", "k=int4,v=fp8_e4m3,rot=1", "k=q5_0,v=iq4_nl,prerope=1"}) {
    auto qc = MakeQuantCache(c, Policy(spec), nullptr, n, MakeRowStore);
    const auto dec = RunCache(*qc, c, x, n, 1, 2);
    const auto pre1 = RunCache(*qc, c, x, n, 128, 1), pre2 = RunCache(*qc, c, x, n, 128, 2);
    EXPECT_LE(MaxRelDiff(dec, pre1), 1e-5) << spec;
    EXPECT_LE(MaxRelDiff(dec, RunCache(*qc, c, x, n, 300, 2)), 1e-5) << spec;
    EXPECT_EQ(std::memcmp(pre1.data(), pre2.data(), pre1.size() * 4), 0) << spec;
    EXPECT_EQ(std::memcmp(dec.data(), RunCache(*qc, c, x, n, 1, 1).data(), dec.size() * 4), 0) << spec;
  }
}

// Rows reconstructed as the cache reads them: through `codec`, back from the H/√d basis when the
// codec rotates its rows itself. x [n, n_kv, hd] -> the same shape.
std::vector<float> Reconstructed(const std::vector<float>& x, const ModelConfig& c, KvFormat f) {
  const RowCodec& codec = *CodecFor(f, false);
  std::vector<float> out(x.size());
  std::vector<uint8_t> buf(codec.row_bytes(c.head_dim, {}));
  for (size_t r = 0; r < x.size() / c.head_dim; ++r) {
    codec.quantize(x.data() + r * c.head_dim, buf.data(), c.head_dim, {});
    codec.dequantize(buf.data(), out.data() + r * c.head_dim, c.head_dim, {});
    if (RowRotatesItself(f)) HadamardRowsRef(out.data() + r * c.head_dim, 1, c.head_dim, c.head_dim);
  }
  return out;
}

// TurboQuant keys are read in the rotated basis and the queries rotated to meet them (vLLM's
// decode); as values, the output is rotated back. Either way attention equals the f32 cache's over
// the reconstructed rows up to rounding, with or without rot=1 (which then rotates only the other
// tensor), in prefill and decode.
TEST(QuantCache, FormatsThatRotateTheirRowsAreReadInTheirBasis) {
  const ModelConfig c = Tiny();
  const int n = 200;
  const Qkv x = Random(c, n, 6);
  struct Spec {
    const char* spec;
    KvFormat k, v;
  };
  for (const Spec& s :
       {Spec{"k=turboquant_mse4,v=turboquant_uniform4", KvFormat::kTurboQuantMse4, KvFormat::kTurboQuantUniform4},
        Spec{"k=turboquant_mse3,v=f32,rot=1", KvFormat::kTurboQuantMse3, KvFormat::kF32},
        Spec{"k=f32,v=turboquant_mse4", KvFormat::kF32, KvFormat::kTurboQuantMse4}}) {
    Qkv rx = x;
    rx.k = Reconstructed(x.k, c, s.k);
    rx.v = Reconstructed(x.v, c, s.v);
    auto ref = MakeF32Cache(c, n);
    const auto want = RunCache(*ref, c, rx, n, 64, 1);
    auto qc = MakeQuantCache(c, Policy(s.spec), nullptr, n, MakeRowStore);
    for (int chunk : {1, 64}) EXPECT_LE(MaxRelDiff(want, RunCache(*qc, c, x, n, chunk, 2)), 2e-6) << s.spec << chunk;
    // And not the unrotated reading: keys (or values) left in the rotated basis would be far off.
    EXPECT_GT(MaxRelDiff(want, RunCache(*ref, c, x, n, 64, 1)), 1e-2) << s.spec;
  }
}

TEST(QuantCache, Bytes) {
  const ModelConfig c = Tiny();
  auto qc = MakeQuantCache(c, Policy("k=q4_0,v=q8_0"), nullptr, 100, MakeRowStore);
  // per token: 2 KV heads x (36 + 68) bytes
  EXPECT_EQ(qc->bytes_per_token(), 2u * (36 + 68));
  const Qkv x = Random(c, 10, 4);
  RunCache(*qc, c, x, 10, 10, 1);
  EXPECT_EQ(qc->bytes_used(), 10u * 2 * (36 + 68));
  // K and V keep sink 4 + recent 8 of 100 positions in f32; the average is rounded up.
  auto prot = MakeQuantCache(c, Policy("k=q4_0,v=q8_0,sink=4,recent=8"), nullptr, 100, MakeRowStore);
  EXPECT_EQ(prot->bytes_per_token(), (2u * (12 * 256 + 88 * 36 + 12 * 256 + 88 * 68) + 99) / 100);
}

}  // namespace
}  // namespace kvaudit
