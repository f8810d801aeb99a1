// The search (decide/search/mix_search.h): a planted instance whose outcome follows from its
// construction, the properties every front has, and agreement with brute force over all
// assignments on seeded random instances, for every shape.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "decide/search/mix_search.h"
#include "decide_mix_test_util.h"
#include "decide_test_util.h"

namespace kvaudit {
namespace {

using testing::Rng;

const std::vector<std::string> kPlainPool = {"f16", "q8_0", "q4_0", "q5_0", "q4_1", "iq4_nl"};
// Modifiers that couple K and V in a layer (rot, sink act on both quantized tensors; group only
// on int formats, so int4,group=32 shares a layer with q4_0).
// vLLM's dtypes, with TurboQuant's K and V formats (presets: fp8_e4m3 + uniform4, mse4 + uniform4).
const std::vector<std::string> kVllmPool = {"f16", "fp8_e4m3", "turboquant_mse4", "turboquant_uniform4"};
const std::vector<std::string> kCoupledPool = {"f16",        "q8_0",        "q4_0",         "q4_0,rot=1",
                                               "q8_0,rot=1", "q4_0,sink=4", "int4,group=32"};

// The bundled model's shape (8 layers, 2 KV heads, head_dim 64): parts with f16, q8_0 and q4_0,
// bytes from the cache's own accounting, per-part costs `q8` and `q4` except the K of the `hot`
// layers, whose quantized costs are 50x.
std::vector<Part> PlantedParts(const std::vector<int>& hot, double q8, double q4) {
  const ModelConfig c = testing::Small64();
  std::vector<Part> parts;
  for (int l = 0; l < c.n_layers; ++l) {
    for (char t : {'k', 'v'}) {
      const bool is_hot = t == 'k' && std::find(hot.begin(), hot.end(), l) != hot.end();
      const double scale = is_hot ? 50.0 : 1.0;
      Part p{l, t, {}};
      for (auto [text, cost] : {std::pair{"f16", 0.0}, {"q8_0", q8 * scale}, {"q4_0", q4 * scale}}) {
        auto cand = ParseCandidate(text, t);
        const uint64_t bytes = *PartBytesPerToken(c, *cand, l, t, 4096, nullptr);
        p.choices.push_back({text, cost, bytes});
      }
      parts.push_back(std::move(p));
    }
  }
  return parts;
}

TEST(DecideMixSearchTest, PlantedSensitiveKeyStaysAtHigherPrecision) {
  const int hot = 3;
  const double q8 = 1.0 / 4096, q4 = 1.0 / 64;  // dyadic: sums are exact
  const MixProblem m = MixProblem::FromPartsOrDie(PlantedParts({hot}, q8, q4));
  const uint64_t b16 = m.part(0, 'k').choices[0].bytes_per_token, b8 = m.part(0, 'k').choices[1].bytes_per_token,
                 b4 = m.part(0, 'k').choices[2].bytes_per_token;
  ASSERT_TRUE(b16 > b8 && b8 > b4);
  // A budget of all-q4_0 plus one q4_0 -> q8_0 step: the step that saves the most cost is the hot
  // K's (50 (q4 - q8) against q4 - q8 anywhere else), and no f16 step fits (b16 - b4 > b8 - b4).
  const uint64_t all_q4 = 16 * b4, budget = all_q4 + (b8 - b4);
  const MixFront free = SearchFront(m, MixShape::kPerLayer);
  const BudgetFit fit = CheapestUnder(free, budget);
  ASSERT_TRUE(fit.best.has_value());
  const MixPoint& p = free[*fit.best];
  std::vector<uint8_t> want(16, 2);       // q4_0 everywhere ...
  want[MixProblem::Index(hot, 'k')] = 1;  // ... but the hot K at q8_0
  EXPECT_EQ(p.choice, want);
  EXPECT_EQ(p.bytes_per_token, budget);
  EXPECT_EQ(p.cost, 50 * q8 + 7 * q4 + 8 * q4);
  EXPECT_EQ(m.Spec(p), "k=q4_0,v=q4_0;layers=3:k=q8_0");
  // Uniform: (q8_0, q4_0) needs 8 (b8 + b4) > budget, so only (q4_0, q4_0) fits, with the hot K
  // at q4_0: a different, costlier pick.
  const MixFront uniform = SearchFront(m, MixShape::kUniform);
  const BudgetFit ufit = CheapestUnder(uniform, budget);
  ASSERT_TRUE(ufit.best.has_value());
  EXPECT_EQ(uniform[*ufit.best].choice, std::vector<uint8_t>(16, 2));
  EXPECT_EQ(uniform[*ufit.best].cost, 50 * q4 + 7 * q4 + 8 * q4);
  EXPECT_EQ(m.Spec(uniform[*ufit.best]), "k=q4_0,v=q4_0");
  // first/last expresses the per-layer pick: K is three runs, -ctk q8_0 with -ctk-first q4_0,3
  // and -ctk-last q4_0,4.
  const MixFront fl = SearchFront(m, MixShape::kFirstLast);
  const BudgetFit ffit = CheapestUnder(fl, budget);
  ASSERT_TRUE(ffit.best.has_value());
  EXPECT_EQ(fl[*ffit.best].choice, want);
}

TEST(DecideMixSearchTest, TwoInteriorHotKeysNeedPerLayerTypes) {
  // Hot K in layers 2 and 5, a budget of two q4_0 -> q8_0 steps. Per layer: both hot K raised.
  // first/last cannot (K would be five runs): one hot K raised (layer 2, the earlier, on the tie
  // with layer 5) and the second step a one-layer raise worth q4 - q8, where the earliest part
  // that keeps K in three runs or V in one raised layer is layer 0 V.
  const double q8 = 1.0 / 4096, q4 = 1.0 / 64;
  const MixProblem m = MixProblem::FromPartsOrDie(PlantedParts({2, 5}, q8, q4));
  const uint64_t b8 = m.part(0, 'k').choices[1].bytes_per_token, b4 = m.part(0, 'k').choices[2].bytes_per_token;
  const uint64_t budget = 16 * b4 + 2 * (b8 - b4);
  const MixFront free = SearchFront(m, MixShape::kPerLayer), fl = SearchFront(m, MixShape::kFirstLast);
  std::vector<uint8_t> both(16, 2), one(16, 2);
  both[MixProblem::Index(2, 'k')] = both[MixProblem::Index(5, 'k')] = 1;
  one[MixProblem::Index(2, 'k')] = one[MixProblem::Index(0, 'v')] = 1;
  EXPECT_EQ(free[*CheapestUnder(free, budget).best].choice, both);
  EXPECT_EQ(m.Spec(free[*CheapestUnder(free, budget).best]), "k=q4_0,v=q4_0;layers=2:k=q8_0;layers=5:k=q8_0");
  const MixPoint& f = fl[*CheapestUnder(fl, budget).best];
  EXPECT_EQ(f.choice, one);
  EXPECT_EQ(f.cost, 50 * q8 + 50 * q4 + 6 * q4 + q8 + 7 * q4);
}

void ExpectFrontProperties(const MixProblem& m, const MixFront& front, const std::string& what) {
  for (size_t i = 0; i < front.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(front[i - 1].bytes_per_token, front[i].bytes_per_token) << what;
      EXPECT_GT(front[i - 1].cost, front[i].cost) << what;
    }
    // The assignment's own parts, summed here (dyadic costs: exact in any order).
    uint64_t bytes = 0;
    double cost = 0;
    for (int l = 0; l < m.n_layers(); ++l) {
      for (char t : {'k', 'v'}) {
        const PartChoice& c = m.part(l, t).choices[front[i].choice[MixProblem::Index(l, t)]];
        bytes += c.bytes_per_token;
        cost += c.cost;
      }
    }
    EXPECT_EQ(front[i].bytes_per_token, bytes) << what << " point " << i;
    EXPECT_EQ(front[i].cost, cost) << what << " point " << i;
  }
}

TEST(DecideMixSearchTest, AgreesWithBruteForceOnRandomInstances) {
  Rng rng(20261211);
  int refused_pairs = 0, points = 0;  // what the instances exercised
  for (int trial = 0; trial < 60; ++trial) {
    const bool coupled = trial % 2 == 1;
    const int layers = 2 + static_cast<int>(rng.Below(2));
    const std::vector<Part> parts =
        testing::RandomParts(rng, layers, 3, coupled ? kCoupledPool : kPlainPool,
                             /*same_lists=*/false, 1 + rng.Below(3) * 16, rng.Below(2) * 100);
    const MixProblem m = MixProblem::FromPartsOrDie(parts);
    const std::string what = "trial " + std::to_string(trial);
    for (int l = 0; l < layers; ++l) {
      for (size_t a = 0; a < m.part(l, 'k').choices.size(); ++a) {
        for (size_t b = 0; b < m.part(l, 'v').choices.size(); ++b) refused_pairs += !m.Compatible(l, a, b);
      }
    }
    for (MixShape shape : {MixShape::kPerLayer, MixShape::kUniform}) {
      const MixFront front = SearchFront(m, shape);
      points += static_cast<int>(front.size());
      ExpectFrontProperties(m, front, what);
      testing::ExpectSameFront(front, testing::BruteFront(m, shape), what + " " + std::string(MixShapeName(shape)));
    }
  }
  EXPECT_GT(refused_pairs, 0);
  EXPECT_GT(points, 120);  // more than one point per front on average
}

TEST(DecideMixSearchTest, GlobalSlidingAgreesWithBruteForce) {
  // Random kinds per layer (at least one of each), the kinds' lists drawn apart: the front is the
  // brute force's over assignments with one K and one V text per kind.
  Rng rng(31);
  int points = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int layers = 3 + static_cast<int>(rng.Below(2));
    const bool coupled = trial % 2 == 1;
    std::vector<Part> parts =
        testing::RandomParts(rng, layers, 3, coupled ? kCoupledPool : kPlainPool, /*same_lists=*/trial % 3 == 0);
    std::vector<bool> sliding(layers);
    sliding[0] = true;
    for (int l = 2; l < layers; ++l) sliding[l] = rng.Below(2) == 1;
    for (Part& p : parts) p.sliding = sliding[p.layer];
    const MixProblem m = MixProblem::FromPartsOrDie(parts);
    const std::string what = "trial " + std::to_string(trial);
    const MixFront front = SearchFront(m, MixShape::kByKind);
    points += static_cast<int>(front.size());
    ExpectFrontProperties(m, front, what);
    testing::ExpectSameFront(front, testing::BruteFront(m, MixShape::kByKind), what);
  }
  EXPECT_GT(points, 40);
  // Without both kinds there is no such front.
  Rng again(31);
  const MixProblem uniform_kind = MixProblem::FromPartsOrDie(testing::RandomParts(again, 3, 3, kPlainPool, true));
  EXPECT_TRUE(SearchFront(uniform_kind, MixShape::kByKind).empty());
}

TEST(DecideMixSearchTest, FirstLastAgreesWithBruteForce) {
  Rng rng(77);
  for (int trial = 0; trial < 30; ++trial) {
    const int layers = 3 + static_cast<int>(rng.Below(2));  // 3 or 4 layers: every run pattern occurs
    const std::vector<Part> parts = testing::RandomParts(rng, layers, 3, kPlainPool, /*same_lists=*/true);
    const MixProblem m = MixProblem::FromPartsOrDie(parts);
    const MixFront front = SearchFront(m, MixShape::kFirstLast);
    const std::string what = "trial " + std::to_string(trial);
    ExpectFrontProperties(m, front, what);
    testing::ExpectSameFront(front, testing::BruteFront(m, MixShape::kFirstLast), what);
  }
}

// vLLM's shape: one quantized type for K and V of the quantized layers, the rest full precision.
TEST(DecideMixSearchTest, SkipLayersAgreesWithBruteForce) {
  Rng rng(4512);
  int points = 0, multi = 0, presets = 0;  // what the instances exercised (measured: 41, 12, 1)
  for (int trial = 0; trial < 45; ++trial) {
    // vLLM's pool on 5 or 6 layers, where a TurboQuant pair can quantize the layers between the ends.
    const bool vllm = trial % 3 == 2;
    const int layers = vllm ? 5 + static_cast<int>(rng.Below(2)) : 2 + static_cast<int>(rng.Below(3));
    const std::vector<std::string>& pool = vllm ? kVllmPool : trial % 3 == 0 ? kCoupledPool : kPlainPool;
    const std::vector<Part> parts =
        testing::RandomParts(rng, layers, vllm ? 3 : 4, pool, /*same_lists=*/vllm || trial % 4 != 0);
    const MixProblem m = MixProblem::FromPartsOrDie(parts);
    const std::string what = "trial " + std::to_string(trial);
    const MixFront front = SearchFront(m, MixShape::kSkipLayers);
    points += static_cast<int>(front.size());
    multi += front.size() > 1;
    ExpectFrontProperties(m, front, what);
    testing::ExpectSameFront(front, testing::BruteFront(m, MixShape::kSkipLayers), what);
    for (const MixPoint& p : front) {
      for (int l = 0; l < layers; ++l) {
        const Candidate& k = m.candidate(l, 'k', p.choice[MixProblem::Index(l, 'k')]);
        const Candidate& v = m.candidate(l, 'v', p.choice[MixProblem::Index(l, 'v')]);
        presets += k.text != v.text;
        EXPECT_TRUE(k.text == v.text || TurboQuantPresetFor(k.format, v.format)) << what;
      }
    }
  }
  EXPECT_GE(points, 35);
  EXPECT_GE(multi, 10);
  EXPECT_GE(presets, 1);  // a layer stored as a TurboQuant pair on some front point
  // Planted: TurboQuant's pair is the only quantized way, on 6 layers: vLLM keeps layers 0, 1, 4, 5
  // unquantized, so the front is f16 everywhere, then layer 3 (the cheaper) paired, then both.
  std::vector<Part> parts;
  for (int l = 0; l < 6; ++l) {
    const double c = l == 3 ? 1.0 / 64 : 2.0 / 64;
    parts.push_back({l, 'k', {{"f16", 0, 256}, {"turboquant_mse4", c, 68}}});
    parts.push_back({l, 'v', {{"f16", 0, 256}, {"turboquant_uniform4", c, 72}}});
  }
  const MixProblem m = MixProblem::FromPartsOrDie(std::move(parts));
  const MixFront front = SearchFront(m, MixShape::kSkipLayers);
  testing::ExpectSameFront(front, testing::BruteFront(m, MixShape::kSkipLayers), "planted");
  ASSERT_EQ(front.size(), 3u);
  EXPECT_EQ(m.Spec(front[0]), "k=f16,v=f16;layers=2-3:k=turboquant_mse4,v=turboquant_uniform4");
  EXPECT_EQ(m.Spec(front[1]), "k=f16,v=f16;layers=3:k=turboquant_mse4,v=turboquant_uniform4");
  EXPECT_EQ(m.Spec(front[2]), "k=f16,v=f16");
}

TEST(DecideMixSearchTest, ShapesNestFromUniformToPerLayer) {
  // Every uniform assignment is first/last and every first/last one per-layer, so at every
  // budget the wider shape's best point costs no more.
  Rng rng(5);
  const MixProblem m = MixProblem::FromPartsOrDie(testing::RandomParts(rng, 12, 5, kPlainPool, true));
  const MixFront u = SearchFront(m, MixShape::kUniform), f = SearchFront(m, MixShape::kFirstLast),
                 p = SearchFront(m, MixShape::kPerLayer);
  for (const MixPoint& point : u) {
    const auto fb = CheapestUnder(f, point.bytes_per_token).best, pb = CheapestUnder(p, point.bytes_per_token).best;
    ASSERT_TRUE(fb && pb);
    EXPECT_LE(f[*fb].cost, point.cost);
    EXPECT_LE(p[*pb].cost, f[*fb].cost);
  }
}

TEST(DecideMixSearchTest, TiesGoToTheLexicographicallySmallestAssignment) {
  // Four parts with the same f16 and q4_0 choices: every point with n parts quantized ties with
  // the others of n, and the smallest assignment keeps the earliest parts at f16 (index 0).
  std::vector<Part> parts;
  for (int l = 0; l < 2; ++l) {
    for (char t : {'k', 'v'}) parts.push_back({l, t, {{"f16", 0, 256}, {"q4_0", 1.0 / 8, 72}}});
  }
  const MixProblem m = MixProblem::FromPartsOrDie(parts);
  const MixFront front = SearchFront(m, MixShape::kPerLayer);
  ASSERT_EQ(front.size(), 5u);                                     // 0..4 parts quantized
  EXPECT_EQ(front[3].choice, (std::vector<uint8_t>{0, 0, 0, 1}));  // all f16 but layer 1 V
  EXPECT_EQ(front[2].choice, (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(front[1].choice, (std::vector<uint8_t>{0, 1, 1, 1}));
}

TEST(DecideMixSearchTest, CoupledChoicesNeverShareALayer) {
  // K q4_0,rot=1 beside V q8_0 would rotate V too: the pair is not an option, even though it is
  // the cheapest in cost at its bytes.
  std::vector<Part> parts = {{0, 'k', {{"f16", 0, 256}, {"q4_0,rot=1", 0, 72}}},
                             {0, 'v', {{"f16", 0, 256}, {"q8_0", 0, 136}}}};
  const MixProblem m = MixProblem::FromPartsOrDie(parts);
  EXPECT_FALSE(m.Compatible(0, 1, 1));
  EXPECT_TRUE(m.Compatible(0, 1, 0));
  EXPECT_TRUE(m.Compatible(0, 0, 1));
  const MixFront front = SearchFront(m, MixShape::kPerLayer);
  ASSERT_EQ(front.size(), 1u);  // every option costs 0: the fewest bytes that can share the layer
  EXPECT_EQ(front[0].bytes_per_token, 72u + 256u);
  EXPECT_EQ(front[0].choice, (std::vector<uint8_t>{1, 0}));
}

TEST(DecideMixSearchTest, SeventyBShapedInstanceHasExactEndpoints) {
  // 80 layers x 8 choices, bytes up to 2048 (no common factor): the cheapest point is every part
  // at its fewest bytes, the last one every part at its least cost.
  Rng rng(70);
  std::vector<Part> parts;
  uint64_t min_bytes = 0;
  double min_cost = 0;
  for (int l = 0; l < 80; ++l) {
    for (char t : {'k', 'v'}) {
      Part p{l, t, {}};
      uint64_t lo = UINT64_MAX;
      double best = 1e9;
      for (const char* c : {"f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"}) {
        p.choices.push_back({c, rng.Below(1 << 20) / 1048576.0, 1 + rng.Below(2048)});
        lo = std::min(lo, p.choices.back().bytes_per_token);
        best = std::min(best, p.choices.back().cost);
      }
      min_bytes += lo;
      min_cost += best;
      parts.push_back(std::move(p));
    }
  }
  const MixProblem m = MixProblem::FromPartsOrDie(parts);
  const MixFront front = SearchFront(m, MixShape::kPerLayer);
  ExpectFrontProperties(m, front, "70B-shaped");
  EXPECT_EQ(front.front().bytes_per_token, min_bytes);
  EXPECT_EQ(front.back().cost, min_cost);
}

TEST(DecideMixSearchTest, BudgetQueries) {
  std::vector<Part> parts = {{0, 'k', {{"f16", 0, 256}, {"q8_0", 1.0 / 16, 136}, {"q4_0", 1.0 / 2, 72}}},
                             {0, 'v', {{"f16", 0, 256}}}};
  const MixFront front = SearchFront(MixProblem::FromPartsOrDie(parts), MixShape::kPerLayer);
  ASSERT_EQ(front.size(), 3u);  // 328, 392, 512 bytes
  const BudgetFit below = CheapestUnder(front, 327);
  EXPECT_FALSE(below.best.has_value());
  EXPECT_EQ(below.n_within, 0u);
  EXPECT_EQ(front[below.cheapest].bytes_per_token, 328u);
  EXPECT_EQ(*CheapestUnder(front, 328).best, 0u);  // a budget is inclusive
  EXPECT_EQ(*CheapestUnder(front, 391).best, 0u);
  EXPECT_EQ(CheapestUnder(front, 392).n_within, 2u);
  EXPECT_EQ(*CheapestUnder(front, 1u << 30).best, 2u);
}

TEST(DecideMixSearchTest, UniformNeedsChoicesEveryLayerOffers) {
  std::vector<Part> parts = {{0, 'k', {{"f16", 0, 256}, {"q8_0", 0, 136}}},
                             {0, 'v', {{"f16", 0, 256}}},
                             {1, 'k', {{"f16", 0, 256}, {"q4_0", 0, 72}}},
                             {1, 'v', {{"f16", 0, 256}}}};
  const MixProblem m = MixProblem::FromPartsOrDie(parts);
  const MixFront u = SearchFront(m, MixShape::kUniform);
  ASSERT_EQ(u.size(), 1u);  // only f16 is common to both layers' K
  EXPECT_EQ(u[0].choice, (std::vector<uint8_t>{0, 0, 0, 0}));
  parts[2].choices.erase(parts[2].choices.begin());  // layer 1 K without f16: no common K choice
  EXPECT_TRUE(SearchFront(MixProblem::FromPartsOrDie(parts), MixShape::kUniform).empty());
}

// A restriction (an engine's RunsExactly) acts before the undominated points are kept: here the
// cheapest, best mix (K q4_0, V q8_0) is one the restriction refuses, and it would hide q8_0/q8_0
// and q4_0/q4_0 if it were dropped afterwards.
TEST(DecideMixSearchTest, ARestrictionActsBeforeDominance) {
  const std::vector<Part> parts = {{0, 'k', {{"f16", 0, 256}, {"q8_0", 0.01, 136}, {"q4_0", 0.001, 72}}},
                                   {0, 'v', {{"f16", 0, 256}, {"q8_0", 0.001, 136}, {"q4_0", 0.05, 72}}}};
  MixProblem m = MixProblem::FromPartsOrDie(parts);
  const MixFront all = SearchFront(m, MixShape::kUniform);
  m.RestrictTo([](const CacheConfig& c) {
    const HeadConfig p = c.ForHead(0, 0);
    return p.k == p.v;
  });
  const MixFront same = SearchFront(m, MixShape::kUniform);
  std::vector<std::string> specs;
  for (const MixPoint& p : same) specs.push_back(m.Spec(p));
  EXPECT_EQ(specs, (std::vector<std::string>{"k=q4_0,v=q4_0", "k=q8_0,v=q8_0", "k=f16,v=f16"}));
  for (const MixPoint& p : all) EXPECT_NE(m.Spec(p), "k=q8_0,v=q8_0") << "the unrestricted front hides it";
}

TEST(DecideMixSearchDeathTest, InvariantsAreChecked) {
  const std::vector<Part> ok = {{0, 'k', {{"f16", 0, 256}}}, {0, 'v', {{"f16", 0, 256}}}};
  auto with = [&](auto edit) {
    std::vector<Part> p = ok;
    edit(p);
    return p;
  };
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) { p[1].tensor = 'k'; })), "given twice");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) { p.pop_back(); })), "one K and one V part");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) {
                 p[0].choices.push_back({"f16", 0, 1});
               })),
               "candidate f16 given twice");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) { p[0].choices[0].candidate = "q9_0"; })), "not a format");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) { p[0].sliding = true; })),
               "K and V parts disagree on whether it slides");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) { p[0].choices[0].cost = std::nan(""); })), "not finite");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) {
                 p[0].choices = {{"q8_0,engine=llama.cpp", 0, 136}};
                 p[1].choices = {{"q8_0,engine=native", 0, 136}};
               })),
               "engine= is whole-cache");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) {
                 p[0].choices.push_back({"q4_0,sink=4", 0, 73});
                 p[1].choices.push_back({"q8_0,engine=llama.cpp", 0, 136});
               })),
               "engine=llama.cpp has no such cache type or protection");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) {
                 p[0].choices.push_back({"kivi4,engine=llama.cpp", 0, 80});
               })),
               "engine=llama.cpp has no such cache type or protection");
  EXPECT_DEATH(MixProblem::FromPartsOrDie(with([](auto& p) {
                 p[0].choices = {{"q4_0,rot=1", 0, 72}};
                 p[1].choices = {{"q8_0", 0, 136}};
               })),
               "no K choice can share the layer");
  // Three options none of which dominates another, with byte differences 1 and 2^39 - 1 (g = 1).
  const std::vector<Part> spread = {{0, 'k', {{"f16", 1, 1}, {"q8_0", 0.5, 2}, {"q4_0", 0, uint64_t{1} << 39}}},
                                    {0, 'v', {{"f16", 0, 1}}}};
  EXPECT_DEATH(SearchFront(MixProblem::FromPartsOrDie(spread), MixShape::kPerLayer), "back-pointer table would take");
  const std::vector<Part> coupled = {{0, 'k', {{"f16", 0, 256}, {"q4_0,rot=1", 0, 72}}},
                                     {0, 'v', {{"f16", 0, 256}, {"q8_0", 0, 136}}}};
  EXPECT_DEATH(SearchFront(MixProblem::FromPartsOrDie(coupled), MixShape::kFirstLast), "cannot share a layer");
}

}  // namespace
}  // namespace kvaudit
