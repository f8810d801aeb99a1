// Known answers for the per-position metrics and their aggregates (docs/metrics.md).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/buckets.h"
#include "eval/fidelity_metrics.h"
#include "eval/fidelity_stats.h"
#include "eval/token_classes.h"

namespace kvaudit {
namespace {

TEST(FidelityMetricsTest, HandComputedKldOnFourTokenVocabulary) {
  // p_base = (.1, .2, .3, .4), p_cfg = (.4, .3, .2, .1): logits are log of the unnormalised masses.
  const std::vector<float> base = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  const std::vector<float> cfg = {std::log(4.0f), std::log(3.0f), std::log(2.0f), 0.0f};
  BaseRow row;
  row.Set(base, /*true_token=*/2);
  const PositionFidelity f = row.Compare(cfg);
  // KL = Σ p ln(p/q) = .1 ln(.25) + .2 ln(2/3) + .3 ln(1.5) + .4 ln 4 = .3 ln 4 + .1 ln 1.5
  EXPECT_NEAR(f.kld, 0.3 * std::log(4.0) + 0.1 * std::log(1.5), 1e-6);
  EXPECT_NEAR(row.nll(), -std::log(0.3), 1e-6);
  EXPECT_NEAR(f.nll, -std::log(0.2), 1e-6);
  EXPECT_NEAR(f.dp, 0.2 - 0.3, 1e-6);
  EXPECT_EQ(row.argmax(), 3);
  EXPECT_FALSE(f.top1);       // cfg's top-1 is token 0
  EXPECT_FALSE(f.top5_drop);  // a 4-token vocabulary has no 6th place
}

TEST(FidelityMetricsTest, IdenticalLogitsGiveExactlyZero) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(0.37f * static_cast<float>(i)) * 9.0f;
  BaseRow row;
  row.Set(logits, 17);
  const PositionFidelity f = row.Compare(logits);
  EXPECT_EQ(f.kld, 0.0);
  EXPECT_EQ(f.dp, 0.0);
  EXPECT_EQ(f.nll, row.nll());
  EXPECT_TRUE(f.top1);
  EXPECT_FALSE(f.top5_drop);
}

TEST(FidelityMetricsTest, TopFiveDropAndFirstIndexTies) {
  std::vector<float> base(10, 0.0f);
  base[7] = 5.0f;  // base top-1 = 7
  BaseRow row;
  row.Set(base, 0);
  // ids 0..4 beat 7 under cfg: it ranks 6th, out of the top-5.
  std::vector<float> cfg = {1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
  EXPECT_TRUE(row.Compare(cfg).top5_drop);
  // 0..3 beat it and 4, 5, 6 tie with it at a lower id (first-index order, as Argmax): 8th.
  cfg = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(row.Compare(cfg).top5_drop);
  // 0..3 beat it; 8, 9 tie at a higher id and rank after it: 5th, kept.
  cfg = {1, 1, 1, 1, -1, -1, -1, 0, 0, 0};
  EXPECT_FALSE(row.Compare(cfg).top5_drop);
  // Ties at the top: the first index wins for both, so all-equal logits agree.
  const std::vector<float> flat(10, 0.0f);
  BaseRow flat_row;
  flat_row.Set(flat, 3);
  EXPECT_EQ(flat_row.argmax(), 0);
  EXPECT_TRUE(flat_row.Compare(flat).top1);
}

TEST(BucketsTest, DefaultPowersOfTwo) {
  const std::vector<Bucket> b = DefaultBuckets(4096);
  ASSERT_EQ(b.size(), 9u);  // 16, 32, ..., 4096
  EXPECT_EQ(b[0].from, 1);
  EXPECT_EQ(b[0].to, 16);
  EXPECT_EQ(b[1].from, 17);
  EXPECT_EQ(b[1].to, 32);
  EXPECT_EQ(b[8].from, 2049);
  EXPECT_EQ(b[8].to, 4096);
  const std::vector<Bucket> odd = DefaultBuckets(1000);
  EXPECT_EQ(odd.back().from, 513);
  EXPECT_EQ(odd.back().to, 1000);
  const std::vector<Bucket> tiny = DefaultBuckets(10);
  ASSERT_EQ(tiny.size(), 1u);
  EXPECT_EQ(tiny[0].to, 10);
  EXPECT_EQ(BucketIndex(b, 1), 0);
  EXPECT_EQ(BucketIndex(b, 16), 0);
  EXPECT_EQ(BucketIndex(b, 17), 1);
  EXPECT_EQ(BucketIndex(b, 2048), 7);
  EXPECT_EQ(BucketIndex(b, 2049), 8);
  EXPECT_EQ(BucketIndex(b, 4096), 8);
  EXPECT_EQ(BucketIndex(b, 4097), -1);
  EXPECT_EQ(BucketIndex(b, 0), -1);
}

TEST(BucketsTest, CustomEdges) {
  auto b = ParseBuckets("16,64", 256);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 3u);
  EXPECT_EQ((*b)[1].from, 17);
  EXPECT_EQ((*b)[1].to, 64);
  EXPECT_EQ((*b)[2].from, 65);
  EXPECT_EQ((*b)[2].to, 256);
  auto exact = ParseBuckets("100,256", 256);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->size(), 2u);
  for (const char* bad : {"64,16", "abc", "", "16,,32", "0", "300", "16,"}) {
    auto r = ParseBuckets(bad, 256);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().exit_code(), 2);
    EXPECT_NE(r.error().message.find("hint"), std::string::npos);
  }
}

TEST(TokenClassesTest, ClassifiesDecodedText) {
  EXPECT_EQ(ClassifyTokenText("123"), TokenClass::kDigits);
  EXPECT_EQ(ClassifyTokenText(" 42"), TokenClass::kDigits);
  EXPECT_EQ(ClassifyTokenText("foo"), TokenClass::kIdentifier);
  EXPECT_EQ(ClassifyTokenText(" foo_bar1"), TokenClass::kIdentifier);
  EXPECT_EQ(ClassifyTokenText("\xc3\xa9t\xc3\xa9"), TokenClass::kIdentifier);  // "été"
  EXPECT_EQ(ClassifyTokenText("();"), TokenClass::kPunct);
  EXPECT_EQ(ClassifyTokenText(" {"), TokenClass::kPunct);
  EXPECT_EQ(ClassifyTokenText("\n\n"), TokenClass::kWhitespace);
  EXPECT_EQ(ClassifyTokenText("    "), TokenClass::kWhitespace);
  EXPECT_EQ(ClassifyTokenText(""), TokenClass::kOther);
  EXPECT_EQ(ClassifyTokenText("a("), TokenClass::kOther);
}

TEST(TokenClassesTest, RareIsTheLeastFrequentDecileWithTiesKept) {
  // Counts: id 1 ×10, ids 2..10 ×3, ids 11..20 ×1 → 20 distinct ids; rank ⌊0.1·19⌋ = 1 has count 1,
  // so all ten singletons are rare (ties are never split by id).
  std::vector<int32_t> tokens(10, 1);
  for (int32_t id = 2; id <= 10; ++id) tokens.insert(tokens.end(), 3, id);
  for (int32_t id = 11; id <= 20; ++id) tokens.push_back(id);
  const std::vector<uint8_t> rare = RareTokens(tokens, 32);
  int n = 0;
  for (uint8_t r : rare) n += r;
  EXPECT_EQ(n, 10);
  EXPECT_TRUE(rare[11] && rare[20]);
  EXPECT_FALSE(rare[1] || rare[5] || rare[0] || rare[25]);  // frequent, or never seen
}

}  // namespace
}  // namespace kvaudit
