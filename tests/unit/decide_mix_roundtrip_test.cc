// A rendered mix parses back to exactly the chosen storage of every (layer, head, tensor), and
// the cache built from it holds the bytes the search summed: seeded random assignments on the
// bundled model's shape (8 layers, 2 KV heads, head_dim 64: models/kvq-code-16m/config.json) and
// on Llama-3-8B's (32 layers, 8 KV heads, head_dim 128).
#include <gtest/gtest.h>

#include "decide/search/mix_search.h"
#include "decide_test_util.h"
#include "model/config.h"
#include "kv/make_cache.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

constexpr int kCtx = 4096;

// Formats whose bytes are a whole number per token at any context: the sums are exact.
const std::vector<std::string> kWhole = {"f16",  "bf16",   "q8_0", "q5_1", "q5_0",         "q4_1",
                                         "q4_0", "iq4_nl", "int8", "int4", "int4,group=32"};
// With protections and fixed bytes (sink rows, a recent window, outlier channels, fp8 scales,
// KIVI's residual): per part ⌈bytes / ctx⌉, so a sum may exceed the cache's own by < 1 B a part.
const std::vector<std::string> kProtected = {"f16",
                                             "q8_0",
                                             "q4_0,rot=1",
                                             "q8_0,rot=1",
                                             "q4_0,sink=4",
                                             "q4_0,recent=64",
                                             "fp8_e4m3",
                                             "fp8_e4m3,scale=calib",
                                             "fp8_e5m2,scale=dynamic",
                                             "kivi4",
                                             "kivi2",
                                             "q4_0,outliers=4"};

// Calibration statistics of the right shape; bytes do not depend on their values.
KvCalibration FakeCalibration(const ModelConfig& c) {
  KvCalibration k;
  k.n_layers = c.n_layers, k.n_kv_heads = c.n_kv_heads, k.head_dim = c.head_dim, k.tokens = 1;
  const size_t heads = static_cast<size_t>(c.n_layers) * c.n_kv_heads;
  k.k_amax.assign(heads, 4.0f);
  k.v_amax.assign(heads, 2.0f);
  for (size_t i = 0; i < heads * c.head_dim; ++i) k.k_channel_amax.push_back(static_cast<float>(i % c.head_dim));
  k.k_pre_rope_channel_amax = k.k_channel_amax;
  return k;
}

// A problem over `pool` (every part offers all of it) whose bytes come from PartBytesPerToken.
MixProblem ProblemOver(const ModelConfig& c, const std::vector<std::string>& pool, const KvCalibration& calib) {
  std::vector<Part> parts;
  for (int l = 0; l < c.n_layers; ++l) {
    for (char t : {'k', 'v'}) {
      Part p{l, t, {}};
      for (const std::string& text : pool) {
        auto cand = ParseCandidate(text, t);
        if (!cand.ok()) continue;  // key-only modifiers on V
        auto bytes = PartBytesPerToken(c, *cand, l, t, kCtx, &calib);
        EXPECT_TRUE(bytes.ok()) << text << ": " << (bytes.ok() ? "" : bytes.error().message);
        p.choices.push_back({text, 0.0, bytes.ok() ? *bytes : 0});
      }
      parts.push_back(std::move(p));
    }
  }
  return MixProblem::FromPartsOrDie(parts);
}

// A random assignment of m in which every layer's pair shares the layer.
MixPoint Draw(testing::Rng& rng, const MixProblem& m, const ModelConfig& c) {
  std::vector<uint8_t> choice(2 * c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const int nk = static_cast<int>(m.part(l, 'k').choices.size()),
              nv = static_cast<int>(m.part(l, 'v').choices.size());
    int k = 0, v = 0;
    for (int tries = 0; tries < 100; ++tries) {  // a pair that shares the layer (f16, f16 always does)
      k = static_cast<int>(rng.Below(nk)), v = static_cast<int>(rng.Below(nv));
      if (m.Compatible(l, k, v)) break;
      k = v = 0;
    }
    choice[MixProblem::Index(l, 'k')] = static_cast<uint8_t>(k);
    choice[MixProblem::Index(l, 'v')] = static_cast<uint8_t>(v);
  }
  return m.Evaluate(std::move(choice));
}

// Parses the point's spec and checks every (layer, head, tensor); returns the cache's bytes per token.
uint64_t RoundTrip(const MixProblem& m, const MixPoint& point, const ModelConfig& c, const KvCalibration& calib) {
  const std::string spec = m.Spec(point);
  auto cache_config = CacheConfig::Parse(spec);
  EXPECT_TRUE(cache_config.ok()) << spec;
  if (!cache_config.ok()) return 0;
  EXPECT_EQ(cache_config->spec(), spec) << "the rendered spec is canonical";
  for (int l = 0; l < c.n_layers; ++l) {
    for (int h = 0; h < c.n_kv_heads; ++h) {
      for (char t : {'k', 'v'}) {
        const Candidate& want = m.candidate(l, t, point.choice[MixProblem::Index(l, t)]);
        EXPECT_EQ(StorageOf(cache_config->ForHead(l, h), t, m.attention()), StorageOf(want, t, m.attention()))
            << spec << " layer " << l << " head " << h << " " << t << " (" << want.text << ")";
      }
    }
  }
  auto cache = MakeCache(c, *cache_config, &calib, kCtx);
  EXPECT_TRUE(cache.ok()) << spec << ": " << (cache.ok() ? "" : cache.error().message);
  return cache.ok() ? (*cache)->bytes_per_token() : 0;
}

class DecideMixRoundTripTest : public ::testing::TestWithParam<int> {
 protected:
  // `trials` random points of the problem over `pool` (every part offers all of it), each parsed
  // back and checked per (layer, head, tensor): check(problem, point, the cache's bytes per token).
  template <class Check>
  void RoundTrips(const std::vector<std::string>& pool, uint64_t seed, int trials, Check check) {
    ModelConfig c = testing::Llama3_8B();
    if (GetParam() == 0) {  // the config alone (no weights are read)
      auto bundled = ConfigFromHfJson(std::string(KVAUDIT_SOURCE_DIR) + "/models/kvq-code-16m/config.json");
      ASSERT_TRUE(bundled.ok()) << bundled.error().message;
      c = *bundled;
      ASSERT_EQ(c.n_layers, 8);
      ASSERT_EQ(c.n_kv_heads, 2);
      ASSERT_EQ(c.head_dim, 64);
    }
    const KvCalibration calib = FakeCalibration(c);
    testing::Rng rng(seed + GetParam());
    const MixProblem m = ProblemOver(c, pool, calib);
    for (int trial = 0; trial < trials; ++trial) {
      const MixPoint p = Draw(rng, m, c);
      check(m, p, RoundTrip(m, p, c, calib));
    }
  }
};

TEST_P(DecideMixRoundTripTest, WholeFormatsHoldExactlyTheSummedBytes) {
  RoundTrips(kWhole, 100, 6, [](const MixProblem& m, const MixPoint& p, uint64_t held) {
    EXPECT_EQ(held, p.bytes_per_token) << m.Spec(p);
  });
}

TEST_P(DecideMixRoundTripTest, ProtectionsRoundTripAndBytesAreNeverUnderstated) {
  RoundTrips(kProtected, 200, 6, [](const MixProblem& m, const MixPoint& p, uint64_t held) {
    // Σ⌈P_i / ctx⌉ >= ⌈Σ P_i / ctx⌉ > Σ⌈P_i / ctx⌉ - n_parts.
    EXPECT_GE(p.bytes_per_token, held) << m.Spec(p);
    EXPECT_LT(p.bytes_per_token, held + 2 * m.n_layers()) << m.Spec(p);
  });
}

TEST_P(DecideMixRoundTripTest, LlamaCppEngineRoundTrips) {
  const std::vector<std::string> pool = {"f16", "q8_0,engine=llama.cpp", "q4_0", "q5_1", "iq4_nl", "q4_0,rot=0"};
  RoundTrips(pool, 300, 4, [](const MixProblem& m, const MixPoint& p, uint64_t held) {
    EXPECT_EQ(m.attention(), AttentionMode::kLlamaCpp);
    EXPECT_EQ(held, p.bytes_per_token) << m.Spec(p);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, DecideMixRoundTripTest, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param == 0 ? "Bundled" : "Llama3_8B"; });

}  // namespace
}  // namespace kvaudit
