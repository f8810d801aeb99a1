// LongRoPE (Phi-3-mini-128k, Phi-3.5) and partial rotary embeddings (Phi-4-mini) against llama.cpp
// itself: the tiny phi3 golden with LongRoPE factors added the way llama.cpp's converter writes them,
// rotating all 16 dims of each head or the first 8 (tests/data/phi3_longrope/README.md: the files,
// and llama.cpp's logits at n_ctx 256, where it runs the short factors, and 512, the long ones). Checked: each
// context's logits within 1e-4 of llama.cpp's with the same argmax and greedy continuation; the choice flips exactly
// above the original context; prefill and decode bitwise equal; the same weights as a Hugging Face directory
// (rope_scaling longrope) give bitwise the GGUF's logits at both contexts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "kv/f32_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "support/fixtures.h"
#include "support/gguf_as_hf.h"
#include "support/llamacpp_golden.h"
#include "support/phi3_longrope.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::Fixture;

constexpr int kOriginal = testing::kPhi3LongRopeOriginal;
using testing::Phi3LongFactors;
using testing::Phi3LongRopeAttnFactor;
using testing::Phi3ShortFactors;

std::string JsonList(const std::vector<float>& f) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < f.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%s%.9g", i ? ", " : "", static_cast<double>(f[i]));
    s += buf;
  }
  return s + "]";
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// Parameter: the rotated dims of each 16-dim head (16: all; 8: the README's rot8 variant, partial
// rotary as in Phi-4-mini). Files for llama.cpp's runs: logits_ctxN.f32 / rot8_logits_ctxN.f32.
class Phi3LongRope : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("phi3-longrope");
    auto m = Model::Load(testing::WritePhi3LongRopeGguf(dir_, GetParam()).string());
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = std::move(*m);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string DataFile(const std::string& name) const {
    const std::string prefix = GetParam() == 16 ? "" : "rot" + std::to_string(GetParam()) + "_";
    return (testing::RepoDir() / "tests/data/phi3_longrope" / (prefix + name)).string();
  }
  fs::path dir_;
  std::unique_ptr<Model> model_;
};

TEST_P(Phi3LongRope, ReadsTheFactorsAndTheOriginalContext) {
  const RopeParams& r = model_->config().rope;
  EXPECT_EQ(r.type, RopeType::kLongRope);
  EXPECT_EQ(r.RotatedDims(16), GetParam());
  EXPECT_EQ(r.long_factors, Phi3LongFactors(GetParam()));
  EXPECT_EQ(r.short_factors, Phi3ShortFactors(GetParam()));
  EXPECT_EQ(r.original_max_position_embeddings, kOriginal);
  EXPECT_EQ(static_cast<float>(r.attn_factor), Phi3LongRopeAttnFactor());
  EXPECT_FALSE(r.UsesLongFactors(kOriginal));
  EXPECT_TRUE(r.UsesLongFactors(kOriginal + 1));
}

// llama.cpp's runs: n_ctx 256 (not above the original 256: short) and 512 (long).
TEST_P(Phi3LongRope, MatchesLlamaCppAtEachContext) {
  const testing::LlamaCppGolden g = testing::ReadLlamaCppGolden("phi3");
  const size_t V = model_->config().vocab_size;
  for (const int ctx : {256, 512}) {
    SCOPED_TRACE("n_ctx " + std::to_string(ctx));
    const std::vector<float> want = testing::ReadF32File(DataFile("logits_ctx" + std::to_string(ctx) + ".f32"));
    ASSERT_EQ(want.size(), g.ids.size() * V);
    const std::vector<float> got = testing::GoldenLogits(*model_, g.ids, ctx);
    const double max_abs = MaxAbsDiff(got, want);
    EXPECT_LE(max_abs, 1e-4);
    for (size_t t = 0; t < g.ids.size(); ++t) {
      const auto a = got.begin() + static_cast<std::ptrdiff_t>(t * V),
                 b = want.begin() + static_cast<std::ptrdiff_t>(t * V);
      EXPECT_EQ(std::max_element(a, a + V) - a, std::max_element(b, b + V) - b) << "position " << t;
    }
    std::printf("[llama.cpp LongRoPE, %d rotated dims, n_ctx %d] max|dlogit| %.3g\n", GetParam(), ctx, max_abs);
    std::ifstream greedy(DataFile("greedy_ctx" + std::to_string(ctx) + ".txt"));
    std::string prompt, cont;
    ASSERT_TRUE(std::getline(greedy, prompt) && std::getline(greedy, cont));
    EXPECT_EQ(testing::GoldenGreedy(*model_, testing::ParseIds(prompt), testing::ParseIds(cont).size(), ctx),
              testing::ParseIds(cont));
    EXPECT_EQ(testing::GoldenLogits(*model_, g.ids, ctx, 2, /*decode=*/true), got) << "prefill and decode differ";
  }
}

// The set is fixed by the run's context, not by how far a sequence has got: every context up to
// the original gives the short set's bits, every one above it the long set's.
TEST_P(Phi3LongRope, TheContextChoosesOneSetForEveryPosition) {
  const std::vector<int32_t> ids = testing::ReadLlamaCppGolden("phi3").ids;
  const std::vector<float> short_run = testing::GoldenLogits(*model_, ids, kOriginal),
                           long_run = testing::GoldenLogits(*model_, ids, kOriginal + 1);
  EXPECT_EQ(testing::GoldenLogits(*model_, ids, 96), short_run);
  EXPECT_EQ(testing::GoldenLogits(*model_, ids, 4096), long_run);
  EXPECT_GT(MaxAbsDiff(short_run, long_run), 0.1) << "the two sets should give clearly different logits";
}

// transformers' config.json spelling of the same model (Phi-3-mini-128k's keys: rope_scaling
// {type longrope, long_factor, short_factor}, original_max_position_embeddings at the top level,
// the attention factor derived from max_position_embeddings / original; Phi-4-mini's
// partial_rotary_factor).
TEST_P(Phi3LongRope, SafetensorsAndGgufGiveTheSameBits) {
  char partial[64];
  std::snprintf(partial, sizeof(partial), R"("partial_rotary_factor": %g, )", GetParam() / 16.0);
  const std::string rope = std::string(partial) + R"("rope_theta": 10000.0, "original_max_position_embeddings": 256,
    "rope_scaling": {"type": "longrope", "long_factor": )" +
                           JsonList(Phi3LongFactors(GetParam())) + R"(, "short_factor": )" +
                           JsonList(Phi3ShortFactors(GetParam())) + "}";
  const fs::path hf = testing::WritePhi3AsHf(Fixture("golden/llamacpp/phi3/model.gguf"), dir_ / "hf", rope);
  auto from_hf = Model::Load(hf.string());
  ASSERT_TRUE(from_hf.ok()) << from_hf.error().message;
  EXPECT_EQ(static_cast<float>((*from_hf)->config().rope.attn_factor), Phi3LongRopeAttnFactor());
  EXPECT_EQ((*from_hf)->config().rope.RotatedDims(16), GetParam());
  const std::vector<int32_t> ids = testing::ReadLlamaCppGolden("phi3").ids;
  for (const int ctx : {256, 512})
    EXPECT_EQ(testing::GoldenLogits(**from_hf, ids, ctx), testing::GoldenLogits(*model_, ids, ctx)) << ctx;
}

INSTANTIATE_TEST_SUITE_P(RotatedDims, Phi3LongRope, ::testing::Values(16, 8));

TEST(Phi3LongRopeRun, AForwardWithoutTheRunsContextIsABug) {
  const fs::path dir = testing::MakeTempDir("phi3-longrope-death");
  auto m = Model::Load(testing::WritePhi3LongRopeGguf(dir).string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto cache = MakeF32Cache((*m)->config(), 16);
  ThreadPool pool(1);
  EXPECT_DEATH(Forward(**m, *cache, pool), "needs the run's context");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit
