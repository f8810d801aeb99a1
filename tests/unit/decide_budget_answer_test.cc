// What recommend says when nothing under the budget passes (decide/recommend/recommend_report.h
// BudgetAnswer): the smallest budget that would have, in bytes and as a share of f16 that admits
// it, or that no budget would, and why.
#include <gtest/gtest.h>

#include "decide/recommend/recommend_report.h"
#include "decide/search/budget.h"

namespace kvaudit {
namespace {

VerifiedPoint Point(const std::string& spec, uint64_t bytes, bool pass, int round) {
  VerifiedPoint p;
  p.spec = spec, p.bytes_per_token = bytes, p.round = round, p.within_budget = round == 1;
  p.verdict.pass = pass;
  if (!pass) {
    GateCase c;
    c.text = "top1_agree 0.972656 < 0.975 (top1_agree_min), context 65-128: 256 tokens";
    c.pass = false;
    p.verdict.cases = {c};
    p.verdict.first_failure = 0;
  }
  return p;
}

RecommendResult Result() {
  RecommendResult r;
  r.policy = "strict", r.f16_bytes_per_token = 4096, r.budget_bytes_per_token = 2048;
  r.verified = {Point("k=q8_0,v=q4_0", 1664, false, 1), Point("k=q8_0,v=q8_0", 2176, false, 2)};
  return r;
}

TEST(BudgetAnswer, TheSmallestPassingBudgetInBytesAndAsAShareOfF16ThatAdmitsIt) {
  RecommendResult r = Result();
  r.verified[1].verdict = ConfigVerdict{};
  r.verified[1].verdict.pass = true;
  r.cheapest_passing = 1;
  const std::string answer = BudgetAnswer(r);
  EXPECT_EQ(answer, "the smallest budget that passes: --budget 2176 (or 0.54xf16), for k=q8_0,v=q8_0");
  // The share given admits the configuration, one hundredth less would not (f16: 4096 bytes).
  ModelConfig shape;
  shape.n_layers = 8, shape.n_kv_heads = 2, shape.head_dim = 64;
  ASSERT_EQ(F16BytesPerToken(shape), 4096u);
  for (const auto& [text, admits] : {std::pair{"0.54xf16", true}, std::pair{"0.53xf16", false}}) {
    const Expected<Budget> b = ParseBudget(text);
    ASSERT_TRUE(b.ok()) << b.error().message;
    const Expected<uint64_t> bytes = BudgetBytesPerToken(*b, shape, 1024);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    EXPECT_EQ(*bytes >= 2176u, admits) << text << ": " << *bytes;
  }
}

TEST(BudgetAnswer, WhenNothingPassesNoBudgetWouldAndTheLargestSaysWhy) {
  const std::string answer = BudgetAnswer(Result());
  EXPECT_EQ(answer,
            "no budget passes policy strict: even k=q8_0,v=q8_0 (2176 bytes/token) fails, first on top1_agree "
            "0.972656 < 0.975 (top1_agree_min), context 65-128: 256 tokens; hint: a looser policy (--policy "
            "balanced, or a TOML file: docs/decision.md), or more --windows if the failure is a near miss");
}

TEST(BudgetAnswer, NothingToSayWhenTheBudgetFoundARecommendation) {
  RecommendResult r = Result();
  r.recommended = 0;
  EXPECT_EQ(BudgetAnswer(r), "");
}

}  // namespace
}  // namespace kvaudit
