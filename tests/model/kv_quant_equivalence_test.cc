// The quantized cache on the bundled kvq-code-16m (docs/formats.md "Prefill == decode", the
// equivalence every later measurement relies on): teacher-forced batched prefill (chunks of 128,
// and one call) gives the same logits as token-by-token decode for every row format and modifier,
// KIVI and the llama.cpp emulation's one-row path, bit for bit (the engine is batch-invariant;
// docs/architecture.md); `k=f32,v=f32` through the quantized path is bit-identical to the f32
// reference cache; results are bitwise independent of the thread count; and ΔNLL vs f32 orders
// f16 < q8_0 < q4_0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kv/calibrate.h"
#include "kv/f32_cache.h"
#include "kv/formats/format_table.h"
#include "kv/make_cache.h"
#include "kv/quant_cache.h"
#include "kv/store/row_store.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace kvaudit {
using ::kvaudit::testing::BundledModelDir;
using ::kvaudit::testing::Fixture;
namespace {

const Model& Bundled() { return testing::BundledModel(); }

std::vector<int32_t> Doc(int d, size_t n) {
  static auto* ref = [] {
    auto r = SafetensorsFile::Open(Fixture("golden/kvq-code-16m-reference.safetensors").string());
    KV_CHECK_MSG(r.ok(), "reference file");
    return new SafetensorsFile(std::move(r).value());
  }();
  const TensorView* t = ref->Find("doc" + std::to_string(d) + ".ids");
  KV_CHECK(t != nullptr && static_cast<size_t>(t->numel()) >= n);
  std::vector<int32_t> ids(n);
  std::memcpy(ids.data(), t->data, n * sizeof(int32_t));
  return ids;
}

// Calibration on other text (doc 5) than the sequences scored (docs 2, 4).
const KvCalibration& Calib() {
  static const KvCalibration* c = [] {
    ThreadPool pool(2);
    auto r = CalibrateKv(Bundled(), Doc(5, 1024), 512, pool);
    KV_CHECK(r.ok());
    return new KvCalibration(std::move(r).value());
  }();
  return *c;
}

std::unique_ptr<KvCache> Cache(const std::string& spec, int max_pos) {
  auto p = CacheConfig::Parse(spec);
  KV_CHECK_MSG(p.ok(), spec.c_str());
  const Status st = p.value().Validate(Bundled().config(), true);
  KV_CHECK_MSG(st.ok(), st.ok() ? "" : st.error().message.c_str());
  return MakeQuantCache(Bundled().config(), p.value(), &Calib(), max_pos, MakeRowStore);
}

// All logits [n, vocab] of ids run in one call of `head` tokens, then calls of `chunk` tokens
// (chunk 1: decode).
std::vector<float> Logits(KvCache& cache, const std::vector<int32_t>& ids, int chunk, int threads = 2, int head = 0) {
  const int V = Bundled().config().vocab_size, n = static_cast<int>(ids.size());
  ThreadPool pool(threads);
  cache.Reset();
  Forward fwd(Bundled(), cache, pool);
  std::vector<float> out(static_cast<size_t>(n) * V);
  for (int t0 = 0; t0 < n;) {
    const int m = std::min(t0 == 0 && head > 0 ? head : chunk, n - t0);
    fwd.Run(std::span<const int32_t>(ids.data() + t0, m), t0, out.data() + static_cast<size_t>(t0) * V, true);
    t0 += m;
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

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Case {
  std::string spec;
  int n;  // tokens
};

// Every row format of the table alone (kv/formats/format_table.h: a new format is here by its
// row), and every modifier on q4_0 (recent=64: the window boundary moves through the 128-token
// prefill chunks; outliers: calibrated on doc 5, not the scored text).
std::vector<Case> FormatCases() {
  std::vector<Case> cases;
  for (const FormatRow& r : FormatTable()) {
    if (r.codec == nullptr) continue;  // KIVI: kEngineCases
    const std::string f(r.name);
    cases.push_back({"k=" + f + ",v=" + f, 300});
    if (r.calib_scale != nullptr) cases.push_back({"k=" + f + ",v=" + f + ",scale=calib", 300});
  }
  for (const char* spec : {"k=q4_0,v=q4_0,rot=1", "k=q4_0,v=q4_0,sink=4", "k=q4_0,v=q4_0,recent=64",
                           "k=q4_0,v=q4_0,outliers=4", "k=q4_0,v=q4_0,prerope=1",
                           "k=fp8_e4m3,v=fp8_e4m3,scale=calib,scale_by=head", "k=fp8_e4m3,v=fp8_e4m3,scale=dynamic",
                           "k=q4_0,v=q4_0,rot=1;layers=0-1:k=f16,v=q8_0;layers=2:k=fp8_e5m2,v=int4,group=32",
                           "kv=turboquant_3bit_nc", "k=q4_0,v=turboquant_mse4,rot=1"}) {
    cases.push_back({spec, 300});
  }
  return cases;
}
std::string CaseName(const ::testing::TestParamInfo<Case>& info) { return "case" + std::to_string(info.index); }

// Per-layer inputs of the cache on the real model: what Forward hands to Append/Attend while it
// runs doc 2 with the f32 cache.
struct LayerInputs {
  std::vector<float> k, kpre, v;  // [n, n_kv_heads, head_dim]
  std::vector<float> q;           // [n, n_heads, head_dim]
};
class Recorder final : public KvCache {
 public:
  Recorder(KvCache& inner, std::vector<LayerInputs>& rec, const ModelConfig& c) : inner_(inner), rec_(rec), c_(c) {}
  void Append(int layer, int pos0, int n, const float* k, const float* kpre, const float* v) override {
    const size_t kvd = c_.kv_dim();
    rec_[layer].k.insert(rec_[layer].k.end(), k, k + n * kvd);
    rec_[layer].kpre.insert(rec_[layer].kpre.end(), kpre, kpre + n * kvd);
    rec_[layer].v.insert(rec_[layer].v.end(), v, v + n * kvd);
    inner_.Append(layer, pos0, n, k, kpre, v);
  }
  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    rec_[layer].q.insert(rec_[layer].q.end(), q, q + static_cast<size_t>(n) * c_.q_dim());
    inner_.Attend(layer, pos0, n, q, out, pool);
  }
  void Reset() override { inner_.Reset(); }
  Status Reserve(int n) override { return inner_.Reserve(n); }
  uint64_t bytes_per_token() const override { return inner_.bytes_per_token(); }
  uint64_t bytes_used() const override { return inner_.bytes_used(); }
  uint64_t bytes_reserved() const override { return inner_.bytes_reserved(); }

 private:
  KvCache& inner_;
  std::vector<LayerInputs>& rec_;
  const ModelConfig& c_;
};

const std::vector<LayerInputs>& Inputs() {
  static const auto* rec = [] {
    const ModelConfig& c = Bundled().config();
    auto* r = new std::vector<LayerInputs>(c.n_layers);
    auto f32 = MakeF32Cache(c, 300);
    Recorder recorder(*f32, *r, c);
    ThreadPool pool(2);
    Forward fwd(Bundled(), recorder, pool);
    std::vector<float> logits(c.vocab_size);
    fwd.Run(Doc(2, 300), 0, logits.data(), false);
    return r;
  }();
  return *rec;
}

// Attention outputs of every layer [n_layers][n, n_heads, head_dim] for the recorded inputs fed to
// `cache` in calls of `chunk` positions (chunk 1: decode).
std::vector<std::vector<float>> Replay(KvCache& cache, int n, int chunk) {
  const ModelConfig& c = Bundled().config();
  const size_t kvd = c.kv_dim(), qd = c.q_dim();
  const auto& in = Inputs();
  ThreadPool pool(2);
  cache.Reset();
  std::vector<std::vector<float>> out(c.n_layers, std::vector<float>(n * qd));
  for (int t0 = 0; t0 < n; t0 += chunk) {
    const int m = std::min(chunk, n - t0);
    for (int l = 0; l < c.n_layers; ++l) {
      cache.Append(l, t0, m, &in[l].k[t0 * kvd], &in[l].kpre[t0 * kvd], &in[l].v[t0 * kvd]);
      cache.Attend(l, t0, m, &in[l].q[t0 * qd], &out[l][t0 * qd], pool);
    }
  }
  return out;
}

// The cache itself, on the model's real K/V/Q: prefill in chunks of 128 and in one call reads every
// row as token-by-token decode does (protections as functions of the query position), so the
// attention outputs of every layer agree bit for bit (the same per-row kernels either way).
class CachePrefillEqualsDecode : public ::testing::TestWithParam<Case> {};

TEST_P(CachePrefillEqualsDecode, AttentionOutputs) {
  const Case cs = GetParam();
  auto cache = Cache(cs.spec, cs.n);
  const auto dec = Replay(*cache, cs.n, 1);
  for (int chunk : {128, cs.n}) {
    const auto pre = Replay(*cache, cs.n, chunk);
    for (size_t l = 0; l < dec.size(); ++l) {
      EXPECT_TRUE(SameBits(dec[l], pre[l]))
          << cs.spec << " prefill" << chunk << " layer " << l << ": max|Δ| / max|out| = " << MaxRelDiff(dec[l], pre[l]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, CachePrefillEqualsDecode, ::testing::ValuesIn(FormatCases()), CaseName);

// End to end through the model: Forward's matmuls and attention compute every row in one
// canonical order whatever the batch (ops/matmul.h, kv/attention/chunked_attention.h), so K/V, and hence
// every quantization decision, are the same bits in prefill and decode.
class PrefillEqualsDecode : public ::testing::TestWithParam<Case> {};

void ExpectPrefillEqualsDecode(KvCache& cache, const Case& cs) {
  const auto ids = Doc(2, cs.n);
  const auto dec = Logits(cache, ids, 1);
  for (int chunk : {128, cs.n}) {
    const auto pre = Logits(cache, ids, chunk);
    EXPECT_TRUE(SameBits(dec, pre)) << cs.spec << " prefill" << chunk
                                    << ": max|Δlogit| / max|logit| = " << MaxRelDiff(dec, pre);
  }
}

TEST_P(PrefillEqualsDecode, Logits) {
  auto cache = Cache(GetParam().spec, GetParam().n);
  ExpectPrefillEqualsDecode(*cache, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Formats, PrefillEqualsDecode, ::testing::ValuesIn(FormatCases()), CaseName);

// KIVI (key groups along tokens; the full-precision residual moves through the 128-token chunks)
// and the llama.cpp emulation's one-row path, built as the CLI builds them.
const Case kEngineCases[] = {
    {"k=kivi2,v=kivi2", 300},
    {"k=kivi4,v=kivi4", 300},
    {"k=kivi2,v=kivi2,group=32,recent=64", 300},
    {"k=kivi4,v=kivi2,group=16,recent=48", 300},
    {"k=q8_0,v=q8_0,engine=llama.cpp", 300},
    {"k=q4_0,v=q4_0,engine=llama.cpp,rot=0", 300},
    {"k=q4_0,v=q4_0,engine=llama.cpp,rot=1", 300},
    {"k=q8_0,v=q4_0,engine=llama.cpp", 300},
};
class PrefillEqualsDecodeEngines : public ::testing::TestWithParam<Case> {};

TEST_P(PrefillEqualsDecodeEngines, Logits) {
  auto p = CacheConfig::Parse(GetParam().spec);
  ASSERT_TRUE(p.ok()) << GetParam().spec;
  auto cache = MakeCache(Bundled().config(), p.value(), &Calib(), GetParam().n);
  ASSERT_TRUE(cache.ok()) << GetParam().spec;
  ExpectPrefillEqualsDecode(*cache.value(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(KiviAndLlamaCpp, PrefillEqualsDecodeEngines, ::testing::ValuesIn(kEngineCases), CaseName);

TEST(KvQuantModel, F32IsBitIdenticalToTheReferenceCache) {
  const auto ids = Doc(2, 300);
  auto ref = MakeF32Cache(Bundled().config(), 300);
  auto qc = Cache("k=f32,v=f32", 300);
  for (int chunk : {300, 128, 1}) {  // decode: the last 40 tokens after a 260-token prefill
    const int head = chunk == 1 ? 260 : 0;
    const auto a = Logits(*ref, ids, chunk, 2, head), b = Logits(*qc, ids, chunk, 2, head);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "chunk " << chunk;
  }
}

TEST(KvQuantModel, BitwiseIdenticalFor1And2Threads) {
  const auto ids = Doc(4, 300);
  for (const char* spec : {"k=q4_0,v=q4_0,recent=64,sink=4", "k=q8_0,v=q4_1,rot=1,outliers=4"}) {
    auto qc = Cache(spec, 300);
    for (int chunk : {128, 1}) {
      const int head = chunk == 1 ? 260 : 0;
      const auto a = Logits(*qc, ids, chunk, 1, head), b = Logits(*qc, ids, chunk, 2, head);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << spec << " chunk " << chunk;
    }
  }
}

// Mean |NLL − NLL_f32| over the next-token predictions of ids.
double MeanAbsDeltaNll(const std::vector<float>& logits, const std::vector<float>& ref,
                       const std::vector<int32_t>& ids) {
  const int V = Bundled().config().vocab_size, n = static_cast<int>(ids.size());
  auto nll = [&](const std::vector<float>& l, int p) {
    const float* row = l.data() + static_cast<size_t>(p) * V;
    double mx = row[0], sum = 0;
    for (int j = 1; j < V; ++j) mx = std::max(mx, static_cast<double>(row[j]));
    for (int j = 0; j < V; ++j) sum += std::exp(row[j] - mx);
    return mx + std::log(sum) - row[ids[p + 1]];
  };
  double s = 0;
  for (int p = 0; p + 1 < n; ++p) s += std::fabs(nll(logits, p) - nll(ref, p));
  return s / (n - 1);
}

TEST(KvQuantModel, DeltaNllOrdersF16Q8Q4) {
  const auto ids = Doc(4, 1000);
  auto f32 = MakeF32Cache(Bundled().config(), 1000);
  const auto ref = Logits(*f32, ids, 512);
  std::vector<double> d;
  for (const char* spec : {"k=f16,v=f16", "k=q8_0,v=q8_0", "k=q4_0,v=q4_0"}) {
    auto qc = Cache(spec, 1000);
    d.push_back(MeanAbsDeltaNll(Logits(*qc, ids, 512), ref, ids));
    std::printf("[kvq] %-16s mean|dNLL| vs f32 over 999 tokens: %.3g\n", spec, d.back());
  }
  EXPECT_LT(d[0], d[1]);
  EXPECT_LT(d[1], d[2]);
}

}  // namespace
}  // namespace kvaudit
