// The bundled kvq-code-16m end to end against transformers (bf16 weights upcast to f32):
// ../shared/golden/kvq-code-16m-reference.safetensors holds per-position NLL and argmax for eval
// docs 0-8, 10, 11 and the last 64 logit rows of docs 2 and 4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/dequantize.h"
#include "io/safetensors.h"
#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"

namespace kvaudit {
using ::kvaudit::testing::BundledModelDir;
using ::kvaudit::testing::Fixture;
namespace {

const std::vector<int> kAllDocs = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11};
// GGUF variants: a subset that keeps the file under a minute on 2 cores (~5.8k tokens each).
const std::vector<int> kGgufDocs = {1, 3, 7, 10};

const SafetensorsFile& Ref() {
  static auto* f = [] {
    auto r = SafetensorsFile::Open(Fixture("golden/kvq-code-16m-reference.safetensors").string());
    KV_CHECK_MSG(r.ok(), "reference file");
    return new SafetensorsFile(std::move(r).value());
  }();
  return *f;
}

template <class T>
std::vector<T> RefTensor(const std::string& name) {
  const TensorView* t = Ref().Find(name);
  KV_CHECK_MSG(t != nullptr, name.c_str());
  std::vector<T> out(t->numel());
  std::memcpy(out.data(), t->data, out.size() * sizeof(T));
  return out;
}

const Model& LoadCached(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[path];
  if (!m) {
    auto r = Model::Load(path);
    KV_CHECK_MSG(r.ok(), r.ok() ? "" : r.error().message.c_str());
    m = std::move(r).value();
  }
  return *m;
}

struct DocScore {
  std::vector<double> nll;      // [len-1]
  std::vector<int32_t> argmax;  // [len]
  std::vector<float> last64;    // [64, vocab]
};

// Prefills the whole document in 512-token calls and scores every position.
DocScore Score(const Model& m, const std::vector<int32_t>& ids, int threads) {
  const int V = m.config().vocab_size, n = static_cast<int>(ids.size());
  ThreadPool pool(threads);
  auto cache = MakeF32Cache(m.config(), n);
  Forward fwd(m, *cache, pool);
  DocScore s;
  std::vector<float> logits(static_cast<size_t>(Forward::kMaxChunk) * V);
  for (int t0 = 0; t0 < n; t0 += Forward::kMaxChunk) {
    const int nc = std::min(Forward::kMaxChunk, n - t0);
    fwd.Run(std::span<const int32_t>(ids.data() + t0, nc), t0, logits.data(), true);
    for (int i = 0; i < nc; ++i) {
      const float* row = logits.data() + static_cast<size_t>(i) * V;
      const int p = t0 + i;
      s.argmax.push_back(static_cast<int32_t>(std::max_element(row, row + V) - row));
      if (p >= n - 64) s.last64.insert(s.last64.end(), row, row + V);
      if (p + 1 < n) {
        double mx = row[0], sum = 0;
        for (int j = 1; j < V; ++j) mx = std::max(mx, static_cast<double>(row[j]));
        for (int j = 0; j < V; ++j) sum += std::exp(row[j] - mx);
        s.nll.push_back(mx + std::log(sum) - row[ids[p + 1]]);
      }
    }
  }
  return s;
}

struct Agreement {
  double sum_abs_dnll = 0, sum_nll = 0, sum_ref_nll = 0;
  int64_t n_nll = 0, n_argmax = 0, same_argmax = 0;
  double mean_dnll() const { return sum_abs_dnll / n_nll; }
  double ppl() const { return std::exp(sum_nll / n_nll); }
  double ref_ppl() const { return std::exp(sum_ref_nll / n_nll); }
};

Agreement Compare(const Model& m, const std::vector<int>& docs, double* worst_logit_ratio = nullptr) {
  Agreement a;
  for (int d : docs) {
    const std::string p = "doc" + std::to_string(d);
    const auto ids = RefTensor<int32_t>(p + ".ids");
    const auto ref_nll = RefTensor<float>(p + ".nll");
    const auto ref_argmax = RefTensor<int32_t>(p + ".argmax");
    const DocScore s = Score(m, ids, 2);
    EXPECT_EQ(s.nll.size(), ref_nll.size());
    for (size_t i = 0; i < s.nll.size(); ++i) {
      a.sum_abs_dnll += std::fabs(s.nll[i] - ref_nll[i]);
      a.sum_nll += s.nll[i];
      a.sum_ref_nll += ref_nll[i];
    }
    a.n_nll += s.nll.size();
    for (size_t i = 0; i < s.argmax.size(); ++i) a.same_argmax += s.argmax[i] == ref_argmax[i];
    a.n_argmax += s.argmax.size();
    if (worst_logit_ratio && (d == 2 || d == 4)) {
      const auto ref = RefTensor<float>(p + ".logits_last64");
      double max_ref = 0, max_diff = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[i])));
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(s.last64[i]) - ref[i]));
      }
      const double ratio = max_diff / (1e-3 * max_ref);
      std::printf("[bundled] %s last64 max|dlogit| %.3g of max|logit| %.3g (ratio to tolerance %.3f)\n", p.c_str(),
                  max_diff, max_ref, ratio);
      *worst_logit_ratio = std::max(*worst_logit_ratio, ratio);
    }
  }
  return a;
}

TEST(ModelBundled, SafetensorsMatchesTransformers) {
  const Model& m = LoadCached(BundledModelDir().string());
  double worst = 0;
  const Agreement a = Compare(m, kAllDocs, &worst);
  std::printf("[bundled] safetensors: %lld positions, mean |dNLL| %.3g, argmax agreement %.4f%%, ppl %.5f (ref %.5f)\n",
              static_cast<long long>(a.n_nll), a.mean_dnll(), 100.0 * a.same_argmax / a.n_argmax, a.ppl(), a.ref_ppl());
  EXPECT_LE(a.mean_dnll(), 1e-3);
  EXPECT_GE(static_cast<double>(a.same_argmax) / a.n_argmax, 0.999);
  EXPECT_LE(worst, 1.0);
}

TEST(ModelBundled, GgufF16MatchesTransformers) {
  const Model& m = LoadCached(Fixture("models/gguf/kvq-code-16m-f16.gguf").string());
  const Agreement a = Compare(m, kGgufDocs);
  std::printf("[bundled] gguf f16: mean |dNLL| %.3g, ppl %.5f (ref %.5f)\n", a.mean_dnll(), a.ppl(), a.ref_ppl());
  EXPECT_LE(a.mean_dnll(), 5e-3);
}

TEST(ModelBundled, GgufQ8_0PerplexityWithin1Percent) {
  const Model& m = LoadCached(Fixture("models/gguf/kvq-code-16m-q8_0.gguf").string());
  const Agreement a = Compare(m, kGgufDocs);
  std::printf("[bundled] gguf q8_0: ppl %.5f vs f32 %.5f (%+.3f%%)\n", a.ppl(), a.ref_ppl(),
              100 * (a.ppl() / a.ref_ppl() - 1));
  EXPECT_LE(std::fabs(a.ppl() / a.ref_ppl() - 1), 0.01);
}

TEST(ModelBundled, GgufQ4KMPerplexityWithin10Percent) {
  const Model& m = LoadCached(Fixture("models/gguf/kvq-code-16m-q4_k_m.gguf").string());
  const Agreement a = Compare(m, kGgufDocs);
  std::printf("[bundled] gguf q4_k_m: ppl %.5f vs f32 %.5f (%+.3f%%)\n", a.ppl(), a.ref_ppl(),
              100 * (a.ppl() / a.ref_ppl() - 1));
  EXPECT_LE(std::fabs(a.ppl() / a.ref_ppl() - 1), 0.10);
}

TEST(ModelBundled, BitwiseIdenticalFor1And2Threads) {
  const Model& m = LoadCached(BundledModelDir().string());
  auto ids = RefTensor<int32_t>("doc1.ids");
  ids.resize(600);  // > one 512 chunk: exercises chunking and the prefill attention path
  const DocScore a = Score(m, ids, 1), b = Score(m, ids, 2);
  ASSERT_EQ(a.last64.size(), b.last64.size());
  EXPECT_EQ(std::memcmp(a.last64.data(), b.last64.data(), a.last64.size() * 4), 0);
  EXPECT_EQ(a.nll, b.nll);
  // Decode steps too (the gemv and chunked-attention paths).
  for (int threads : {1, 2}) {
    static std::vector<float> first;
    ThreadPool pool(threads);
    auto cache = MakeF32Cache(m.config(), 700);
    Forward fwd(m, *cache, pool);
    std::vector<float> logits(m.config().vocab_size);
    fwd.Run(std::span<const int32_t>(ids.data(), 580), 0, logits.data(), false);
    for (int p = 580; p < 600; ++p) fwd.Run(std::span<const int32_t>(&ids[p], 1), p, logits.data(), false);
    if (threads == 1)
      first = logits;
    else
      EXPECT_EQ(std::memcmp(first.data(), logits.data(), logits.size() * 4), 0);
  }
}

TEST(ModelBundled, PrefillEqualsDecode) {
  const Model& m = LoadCached(BundledModelDir().string());
  auto ids = RefTensor<int32_t>("doc3.ids");
  ids.resize(300);
  const int V = m.config().vocab_size, n = static_cast<int>(ids.size());
  ThreadPool pool(2);
  auto cache = MakeF32Cache(m.config(), n);
  Forward fwd(m, *cache, pool);
  std::vector<float> pre(static_cast<size_t>(n) * V), dec(pre.size());
  fwd.Run(ids, 0, pre.data(), true);
  cache->Reset();
  for (int p = 0; p < n; ++p)
    fwd.Run(std::span<const int32_t>(&ids[p], 1), p, dec.data() + static_cast<size_t>(p) * V, false);
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < pre.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(pre[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(pre[i]) - dec[i]));
  }
  std::printf("[bundled] prefill vs decode: max|dlogit| %.3g, relative %.3g\n", max_diff, max_diff / max_ref);
  EXPECT_EQ(std::memcmp(pre.data(), dec.data(), pre.size() * sizeof(float)), 0)  // batch invariance is bitwise
      << "max|dlogit| " << max_diff << " of max|logit| " << max_ref;
}

}  // namespace
}  // namespace kvaudit
