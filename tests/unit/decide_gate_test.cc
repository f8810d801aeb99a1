// The gate's evaluation on synthetic results.json files written here (decide/gate/gate.h,
// docs/decision.md "Gate"): one failing case per violated criterion, the first failure and
// safe_up_to, target_context, the audit layout, and what is bad input (a required family missing,
// another model, another schema_version, a metric the policy needs but the results lack).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <algorithm>
#include <filesystem>
#include <map>

#include "decide/gate/gate.h"
#include "decide/gate/gate_inputs.h"
#include "decide/acceptance/policy.h"
#include "support/fixtures.h"
#include "support/gate_results.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::SyntheticBucket;

// Four default-style buckets of 400 tokens (above the 189 a bucket needs to pass top1_agree_min
// 0.98 at all, so none is pooled); their intervals are points at the values unless a test sets them.
std::vector<SyntheticBucket> Buckets(double kld = 0.001) {
  return {{1, 16, kld, 0.01, 0.995, 1.001, 400},
          {17, 32, kld, 0.01, 0.995, 1.001, 400},
          {33, 64, kld, 0.01, 0.995, 1.001, 400},
          {65, 128, kld, 0.01, 0.995, 1.001, 400}};
}

constexpr const char* kPolicy =
    "[fidelity]\nkld_mean_max = 0.005\nkld_p99_max = 0.05\ntop1_agree_min = 0.98\nppl_ratio_max = 1.005\n"
    "[probes]\nfail_on_significant = true\n"
    "[probes.needle]\nrequired = true\ncache_induced_rate_max = 0.1\n"
    "[probes.variance]\nsame_seed_divergence_max = 0.5\n"
    "[probes.drift]\nkl_mean_max = 0.01\n";

AcceptancePolicy Policy(const std::string& text = kPolicy) {
  auto p = ParsePolicy(text, "test.toml");
  KV_CHECK_MSG(p.ok(), p.ok() ? "" : p.error().message.c_str());
  return *p;
}

// Enough instances for the exact intervals to clear the thresholds: 0 of 40 needles (at most 8.8%
// cache-induced, under 0.1), 8 of 40 same-seed pairs differ (at most 36%, under 0.5).
ProbeConfigResult GoodProbes(const std::string& spec) {
  return {spec, {{"needle", 40, 0, 0, 1.0, false}, {"exact", 8, 0, 0, 1.0, false}},
          1,    40,
          32,   {{512, 0.001}, {1024, 0.002}}};
}

GateInputs Load(const std::vector<fs::path>& dirs) {
  std::vector<std::string> d;
  for (const fs::path& p : dirs) d.push_back(p.string());
  auto in = LoadGateInputs(d);
  KV_CHECK_MSG(in.ok(), in.ok() ? "" : in.error().message.c_str());
  return *in;
}

// Writes an eval and a probe result of the same configurations and judges them.
Expected<GateReport> Gate(const std::vector<testing::SyntheticEvalConfig>& eval,
                          const std::vector<ProbeConfigResult>& probe, const std::string& policy = kPolicy) {
  const fs::path dir = testing::MakeTempDir("gate");
  const GateInputs in = Load({testing::WriteResults(dir / "eval", testing::SyntheticEvalResults(eval)),
                              testing::WriteResults(dir / "probe", testing::SyntheticProbeResults(probe))});
  return EvaluateGate(Policy(policy), in);
}

std::vector<std::string> FailingCriteria(const ConfigVerdict& v) {
  std::vector<std::string> out;
  for (const GateCase& c : v.cases) {
    if (!c.pass) out.push_back(c.criterion + " @ " + c.scope);
  }
  return out;
}

TEST(DecideGate, AConfigurationWithinEveryThresholdPasses) {
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {GoodProbes("k=q8_0,v=q8_0")});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->configs.size(), 1u);
  const ConfigVerdict& v = r->configs[0];
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(r->exit_code(), 0);
  // 4 buckets × 4 metrics, needle rate + needle significance + exact significance, variance, drift.
  EXPECT_EQ(v.cases.size(), 16u + 3u + 1u + 1u);
  EXPECT_FALSE(v.first_failure.has_value());
  EXPECT_EQ(v.safe_up_to, 128);
  EXPECT_TRUE(v.safe_up_to_is_all_measured);
  EXPECT_EQ(SafeUpToText(v), "all measured (>= 128)");
  // [probes] fail_on_significant reaches every checked family; the two the run did not have are listed.
  ASSERT_EQ(v.not_judged.size(), 1u);
  EXPECT_EQ(v.not_judged[0].rfind("constraint, custom: not in ", 0), 0u) << v.not_judged[0];
}

TEST(DecideGate, OneFailingCasePerViolatedCriterion) {
  std::vector<SyntheticBucket> b = Buckets();
  b[1].kld_mean = 0.02;   // 17-32
  b[2].top1_agree = 0.9;  // 33-64
  b[3].ppl_ratio = 1.02;  // 65-128
  b[3].kld_p99 = 0.5;     // 65-128
  ProbeConfigResult p = GoodProbes("k=q4_0,v=q4_0");
  p.pooled[0] = {"needle", 20, 6, 0, 0.03, true};  // rate 0.3 [0.12, 0.54] and significant
  p.variance_identical = 2;                        // 8 of 10 differ
  p.drift_kl_mean = {{512, 0.004}, {1024, 0.2}};
  const auto r = Gate({{"k=q4_0,v=q4_0", b}}, {p});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ConfigVerdict& v = r->configs[0];
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(r->exit_code(), 1);
  EXPECT_EQ(FailingCriteria(v),
            (std::vector<std::string>{
                "kld_mean_max @ context 17-32", "top1_agree_min @ context 33-64", "kld_p99_max @ context 65-128",
                "ppl_ratio_max @ context 65-128", "needle.cache_induced_rate_max @ family needle",
                "needle.fail_on_significant @ family needle", "variance.same_seed_divergence_max @ family variance",
                "drift.kl_mean_max @ family drift"}));
  // The first failure: the smallest bucket, then the policy's criterion order.
  ASSERT_TRUE(v.first_failure.has_value());
  const GateCase& first = v.cases[*v.first_failure];
  EXPECT_EQ(first.criterion, "kld_mean_max");
  EXPECT_EQ(first.from, 17);
  EXPECT_EQ(first.measured, 0.02);
  EXPECT_EQ(first.threshold, 0.005);
  EXPECT_EQ(first.outcome, CaseOutcome::kFail);
  EXPECT_EQ(first.text, "kld_mean 0.02 [0.02, 0.02] > 0.005 (kld_mean_max), context 17-32: 400 tokens in 4 windows");
  EXPECT_EQ(v.safe_up_to, 16);
  EXPECT_FALSE(v.safe_up_to_is_all_measured);
  const auto drift =
      std::find_if(v.cases.begin(), v.cases.end(), [](const GateCase& c) { return c.family == "drift"; });
  ASSERT_NE(drift, v.cases.end());
  EXPECT_EQ(drift->measured, 0.2);  // the worst length
  EXPECT_NE(drift->text.find("at length 1024"), std::string::npos) << drift->text;
}

// A family the baseline fails (exact: 3 of 12 pass, below the default floor of half) says nothing
// about the cache: its criteria are skipped cases, the configuration is judged on the rest, and
// the family is named as no signal. At exactly the floor (6 of 12) it is judged.
TEST(DecideGate, AFamilyTheBaselineFailsIsNoSignalNotAPass) {
  ProbeConfigResult p = GoodProbes("k=q4_0,v=q4_0");
  p.pooled[1] = {"exact", 12, 2, 0, 0.5, false, /*baseline_pass=*/3};  // 2 of the 3 lost under the cache
  const auto r = Gate({{"k=q4_0,v=q4_0", Buckets()}}, {p});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ConfigVerdict& v = r->configs[0];
  EXPECT_TRUE(v.pass);
  EXPECT_TRUE(FailingCriteria(v).empty());
  std::vector<std::string> skipped;
  for (const GateCase& c : v.cases) {
    if (c.outcome != CaseOutcome::kNoSignal) continue;
    skipped.push_back(c.criterion);
    EXPECT_TRUE(c.pass);
    EXPECT_EQ(c.measured, 0.25);
    EXPECT_EQ(c.threshold, 0.5);
    EXPECT_EQ(c.text,
              "no signal: the baseline passes 3 of 12 exact instances (0.25 < baseline_pass_min 0.5), so the cache "
              "cannot be judged on them");
  }
  EXPECT_EQ(skipped, std::vector<std::string>{"exact.fail_on_significant"});
  EXPECT_EQ(v.no_signal, std::vector<std::string>{"exact: the baseline passes 3 of 12"});

  p.pooled[1].baseline_pass = 6;  // rate 0.5: judged, and 2 of 6 lost is not significant here
  const auto at_floor = Gate({{"k=q4_0,v=q4_0", Buckets()}}, {p});
  ASSERT_TRUE(at_floor.ok()) << at_floor.error().message;
  EXPECT_TRUE(at_floor->configs[0].no_signal.empty());
  for (const GateCase& c : at_floor->configs[0].cases) EXPECT_NE(c.outcome, CaseOutcome::kNoSignal) << c.criterion;
}

// The floor is the policy's: [probes] sets it for every checked family, a family's own table over
// it; 0 judges the family whatever the baseline does.
TEST(DecideGate, TheNoSignalFloorIsThePolicys) {
  ProbeConfigResult p = GoodProbes("k=q4_0,v=q4_0");
  p.pooled[0] = {"needle", 200, 1, 0, 1.0, false, /*baseline_pass=*/40};  // rate 0.2; 1 of 200 cache-induced
  auto with = [](const std::string& table, const std::string& line) {
    std::string text = kPolicy;
    return text.insert(text.find(table) + table.size(), line);
  };
  const std::pair<std::string, bool> cases[] = {
      {kPolicy, true},                                                // the default floor 0.5
      {with("[probes]\n", "baseline_pass_min = 0.1\n"), false},       // [probes]'s floor
      {with("[probes.needle]\n", "baseline_pass_min = 0\n"), false},  // the family's own
      {with("[probes]\n", "baseline_pass_min = 0.1\n") + "[probes.exact]\nbaseline_pass_min = 0.9\n", false}};
  for (const auto& [policy, needle_skipped] : cases) {
    const auto r = Gate({{"k=q4_0,v=q4_0", Buckets()}}, {p}, policy);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const ConfigVerdict& v = r->configs[0];
    size_t skipped = 0;
    for (const GateCase& c : v.cases) skipped += c.family == "needle" && c.outcome == CaseOutcome::kNoSignal;
    EXPECT_EQ(skipped, needle_skipped ? 2u : 0u) << policy;  // cache_induced_rate_max and fail_on_significant
    EXPECT_EQ(v.no_signal.empty(), !needle_skipped) << policy;
    EXPECT_TRUE(v.pass) << policy;  // judged: 1 of 200 ([0.0001, 0.028]) is within cache_induced_rate_max 0.1
  }
}

TEST(DecideGate, SafeUpToIsNoneWhenTheFirstBucketFails) {
  std::vector<SyntheticBucket> b = Buckets();
  b[0].kld_mean = 0.5;
  const auto r = Gate({{"k=q4_0,v=q4_0", b}}, {GoodProbes("k=q4_0,v=q4_0")});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->configs[0].safe_up_to.has_value());
  EXPECT_EQ(SafeUpToText(r->configs[0]), "none");
}

TEST(DecideGate, SignificantTowardTheConfigurationIsNoLoss) {
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q8_0");
  p.pooled[0] = {"needle", 40, 0, 8, 0.008, true};
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {p});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->configs[0].pass);
}

TEST(DecideGate, TargetContextLimitsTheJudgedBuckets) {
  std::vector<SyntheticBucket> b = Buckets();
  b[3].kld_mean = 0.5;  // 65-128 fails, beyond the target
  const auto r =
      Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, std::string("target_context = 64\n") + kPolicy);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->configs[0].pass);
  for (const GateCase& c : r->configs[0].cases) EXPECT_LE(c.from, 64) << c.scope;
  EXPECT_EQ(r->configs[0].safe_up_to, 64);  // the safe range still reads every bucket
  EXPECT_FALSE(r->configs[0].safe_up_to_is_all_measured);
}

TEST(DecideGate, TargetContextBeyondTheMeasuredBucketsIsBadInput) {
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {GoodProbes("k=q8_0,v=q8_0")},
                      std::string("target_context = 4096\n") + kPolicy);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_NE(r.error().message.find("target_context 4096 is beyond the longest context eval measured"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("--ctx 4096"), std::string::npos) << r.error().message;
}

// A bucket with fewer than min_bucket_tokens is judged together with the buckets after it until
// the pool has enough: token-weighted mean KLD and top-1, the PPL ratio from the weighted mean
// ΔNLL, and the largest p99 of the parts (an upper bound of the pooled p99); the intervals of the
// means from the parts' sums by window.
TEST(DecideGate, SmallBucketsArePooledWithTheNextUntilTheyHoldEnoughTokens) {
  std::vector<SyntheticBucket> b = Buckets();
  b[0] = {1, 16, 0.004, 0.02, 0.95, 1.002, 320};    // alone: fails top1_agree_min 0.96
  b[1] = {17, 32, 0.001, 0.04, 0.995, 1.004, 960};  // pooled 1-32: 1280 tokens
  b[2].tokens = b[3].tokens = 1000;
  std::string policy = kPolicy;
  policy.replace(policy.find("top1_agree_min = 0.98"), 21, "top1_agree_min = 0.96");
  policy.insert(policy.find('\n') + 1, "min_bucket_tokens = 1000\n");  // into [fidelity]
  const auto r = Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, policy);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ConfigVerdict& v = r->configs[0];
  std::map<std::string, const GateCase*> first_bucket;
  for (const GateCase& c : v.cases) {
    if (c.from == 1) first_bucket[c.criterion] = &c;
  }
  ASSERT_EQ(first_bucket.size(), 4u);
  for (const auto& [criterion, c] : first_bucket) {
    EXPECT_EQ(c->scope, "context 1-32") << criterion;
    EXPECT_EQ(c->to, 32) << criterion;
  }
  const double top1 = (320 * 0.95 + 960 * 0.995) / 1280;
  EXPECT_DOUBLE_EQ(first_bucket["kld_mean_max"]->measured, (320 * 0.004 + 960 * 0.001) / 1280);
  EXPECT_DOUBLE_EQ(first_bucket["top1_agree_min"]->measured, top1);
  EXPECT_DOUBLE_EQ(first_bucket["kld_p99_max"]->measured, 0.04);
  EXPECT_NEAR(first_bucket["ppl_ratio_max"]->measured, std::exp((320 * std::log(1.002) + 960 * std::log(1.004)) / 1280),
              1e-15);
  // The pooled top-1 interval is the pool's own (Wilson's for 1280 tokens: the synthetic windows do
  // not differ), not the parts' bounds averaged.
  const std::optional<Interval>& ci = first_bucket["top1_agree_min"]->interval;
  ASSERT_TRUE(ci.has_value());
  const double z2 = 1.959963984540054 * 1.959963984540054, n = 1280;
  const double center = (top1 + z2 / (2 * n)) / (1 + z2 / n);
  EXPECT_NEAR(ci->lo, center - std::sqrt(z2) / (1 + z2 / n) * std::sqrt(top1 * (1 - top1) / n + z2 / (4 * n * n)),
              1e-9);
  EXPECT_DOUBLE_EQ(first_bucket["kld_p99_max"]->interval->hi, 0.04);               // the hull of the parts' points
  EXPECT_TRUE(v.pass) << (v.first_failure ? v.cases[*v.first_failure].text : "");  // 0.98375 [0.975, 0.99] >= 0.96
  EXPECT_EQ(v.cases.size(), 12u + 3u + 1u + 1u);  // 3 judged ranges × 4 metrics, then the probes
  // A short last bucket joins the range before it; a run with too few tokens in all is bad input.
  b[3].tokens = 20;
  const auto tail = Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, policy);
  ASSERT_TRUE(tail.ok()) << tail.error().message;
  bool saw_33_128 = false;
  for (const GateCase& c : tail->configs[0].cases) saw_33_128 = saw_33_128 || c.scope == "context 33-128";
  EXPECT_TRUE(saw_33_128);
  for (SyntheticBucket& x : b) x.tokens = 16;
  const auto few = Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, policy);
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.error().exit_code(), 2);
  EXPECT_NE(few.error().message.find("context 1-128 of k=q8_0,v=q8_0 has 64 scored tokens in all, fewer than "
                                     "fidelity.min_bucket_tokens = 1000"),
            std::string::npos)
      << few.error().message;
  EXPECT_NE(few.error().message.find("--windows"), std::string::npos) << few.error().message;
}

// Without min_bucket_tokens the minimum is what top1_agree_min needs: every token agreeing clears
// 0.98 from 189 tokens on (Wilson: n / (n + z²)), so 100-token buckets are judged in pairs and the
// baseline's own arithmetic (KLD 0, every token agreeing) passes.
TEST(DecideGate, TheMinimumSampleIsWhatTop1AgreeMinNeeds) {
  std::vector<SyntheticBucket> b = {
      {1, 16, 0, 0, 1, 1, 100}, {17, 32, 0, 0, 1, 1, 100}, {33, 64, 0, 0, 1, 1, 100}, {65, 128, 0, 0, 1, 1, 100}};
  const auto r = Gate({{"k=f32,v=f32", b}}, {GoodProbes("k=f32,v=f32")});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ConfigVerdict& v = r->configs[0];
  EXPECT_TRUE(v.pass) << (v.first_failure ? v.cases[*v.first_failure].text : "");
  EXPECT_EQ(v.outcome, CaseOutcome::kPass);
  for (const GateCase& c : v.cases) {
    if (!c.family.empty()) continue;
    EXPECT_TRUE(c.scope == "context 1-32" || c.scope == "context 33-128") << c.scope;
  }
  for (SyntheticBucket& x : b) x.tokens = 40;  // 160 in all: below 189
  const auto few = Gate({{"k=f32,v=f32", b}}, {GoodProbes("k=f32,v=f32")});
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.error().message.find("fewer than the 189 a bucket needs to pass top1_agree_min"), std::string::npos)
      << few.error().message;
}

// The user's case: 249 of 256 tokens agree, 0.9727 [0.9447, 0.9867] against 0.975. Neither a pass
// nor a failure: INCONCLUSIVE, with how many more windows would likely decide it; where it falls
// is the policy's (fail: exit 1; warn: a pass with the warning).
TEST(DecideGate, AnIntervalThatStraddlesTheThresholdIsInconclusive) {
  std::vector<SyntheticBucket> b = Buckets();
  for (SyntheticBucket& x : b) x.tokens = 256;
  b[2].top1_agree = 249.0 / 256, b[2].top1_ci = Interval{0.9447, 0.9867};
  std::string policy = kPolicy;
  policy.replace(policy.find("top1_agree_min = 0.98"), 21, "top1_agree_min = 0.975");
  const auto r = Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, policy);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ConfigVerdict& v = r->configs[0];
  EXPECT_EQ(v.outcome, CaseOutcome::kInconclusive);
  EXPECT_FALSE(v.pass);  // a policy file without `inconclusive` fails it
  EXPECT_EQ(r->exit_code(), 1);
  EXPECT_EQ(r->inconclusive(), 1);
  ASSERT_TRUE(v.first_failure.has_value());
  const GateCase& c = v.cases[*v.first_failure];
  EXPECT_EQ(c.outcome, CaseOutcome::kInconclusive);
  // Half-width toward the threshold 0.01404, distance 0.00234: about (6.0)² = 36 times the 4 windows.
  EXPECT_EQ(c.text,
            "top1_agree 0.972656 [0.9447, 0.9867] straddles 0.975 (top1_agree_min), context 33-64: 256 tokens in 4 "
            "windows; about 140 more windows would likely decide it");
  EXPECT_EQ(v.safe_up_to, 32);  // an undecided bucket is not shown safe
  EXPECT_NE(r->InconclusiveNote().find("counts that as a failure (inconclusive = \"fail\")"), std::string::npos);

  const auto warn = Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, "inconclusive = \"warn\"\n" + policy);
  ASSERT_TRUE(warn.ok()) << warn.error().message;
  EXPECT_EQ(warn->configs[0].outcome, CaseOutcome::kInconclusive);
  EXPECT_TRUE(warn->configs[0].pass);
  EXPECT_EQ(warn->exit_code(), 0);
  EXPECT_NE(warn->InconclusiveNote().find("passes it with this warning"), std::string::npos);
  EXPECT_EQ(warn->configs[0].safe_up_to, 128);

  // The same point with an interval wholly below the threshold fails; wholly above, passes.
  b[2].top1_ci = Interval{0.96, 0.974};
  EXPECT_EQ(Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, policy)->configs[0].outcome,
            CaseOutcome::kFail);
  b[2].top1_agree = 0.99, b[2].top1_ci = Interval{0.976, 0.998};
  EXPECT_EQ(Gate({{"k=q8_0,v=q8_0", b}}, {GoodProbes("k=q8_0,v=q8_0")}, policy)->configs[0].outcome,
            CaseOutcome::kPass);
}

// top1_agree_min = 1 and a rate maximum of 0 are rules on the sample: no interval can clear them,
// so they are judged as measured (every token agrees; no cache-induced failure at all).
TEST(DecideGate, ThresholdsAtTheEndOfTheRangeAreRulesOnTheSample) {
  std::vector<SyntheticBucket> b = Buckets();
  for (SyntheticBucket& x : b) x.top1_agree = 1, x.top1_ci = Interval{0.99, 1};
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q8_0");
  p.pooled[0] = {"needle", 12, 0, 0, 1.0, false};
  std::string policy = kPolicy;
  policy.replace(policy.find("top1_agree_min = 0.98"), 21, "top1_agree_min = 1.0");
  policy.replace(policy.find("cache_induced_rate_max = 0.1"), 28, "cache_induced_rate_max = 0.0");
  const auto r = Gate({{"k=q8_0,v=q8_0", b}}, {p}, policy);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->configs[0].pass) << r->configs[0].cases[*r->configs[0].first_failure].text;
  for (const GateCase& c : r->configs[0].cases) {
    if (c.criterion == "top1_agree_min" || c.criterion == "needle.cache_induced_rate_max") {
      EXPECT_FALSE(c.interval.has_value()) << c.text;
    }
  }
  p.pooled[0].cache_induced = 1;
  const auto one = Gate({{"k=q8_0,v=q8_0", b}}, {p}, policy);
  EXPECT_EQ(one->configs[0].outcome, CaseOutcome::kFail);
}

// A probe rate is judged by its exact interval: 0 of 12 needles lost is no proof of a rate under
// 0.1 (Clopper-Pearson up to 0.265); 36 instances would be (up to 0.0973).
TEST(DecideGate, ProbeRatesAreJudgedByTheirExactInterval) {
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q8_0");
  p.pooled[0] = {"needle", 12, 0, 0, 1.0, false};
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {p});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ConfigVerdict& v = r->configs[0];
  EXPECT_EQ(v.outcome, CaseOutcome::kInconclusive);
  const GateCase& c = v.cases[*v.first_failure];
  EXPECT_EQ(c.criterion, "needle.cache_induced_rate_max");
  EXPECT_EQ(c.text,
            "cache-induced rate 0 [0, 0.264648] straddles 0.1 (needle.cache_induced_rate_max), family needle: 0 "
            "cache-induced failures, 0 recoveries in 12 pooled instances; about 24 more instances would likely "
            "decide it");
  p.pooled[0].n = 36;
  EXPECT_EQ(Gate({{"k=q8_0,v=q8_0", Buckets()}}, {p})->configs[0].outcome, CaseOutcome::kPass);
}

// The team's own probes come first: a custom probe the baseline passes and the configuration
// fails is named under every policy, and fails the configuration where probes.custom.per_probe is
// "fail" (strict), a warning where it is "warn" (balanced, and the default). With none lost the
// rule is one passing case; a probe the baseline fails is no evidence and not judged.
TEST(DecideGate, ACustomProbeLostUnderTheConfigurationIsNamedAndFailsWhereThePolicySays) {
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q4_0");
  p.custom = {{"json-schema", 1053, true, false}, {"fib", 12, true, true}, {"too-hard", 40, false, false}};
  const std::string fails = std::string(kPolicy) + "[probes.custom]\nper_probe = \"fail\"\n";
  const auto strict = Gate({{"k=q8_0,v=q4_0", Buckets()}}, {p}, fails);
  ASSERT_TRUE(strict.ok()) << strict.error().message;
  const ConfigVerdict& v = strict->configs[0];
  EXPECT_EQ(v.outcome, CaseOutcome::kFail);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.lost_custom_probes, std::vector<std::string>{"json-schema (1053 tokens)"});
  ASSERT_TRUE(v.first_failure.has_value());
  EXPECT_EQ(v.cases[*v.first_failure].criterion, "custom.per_probe");
  EXPECT_EQ(v.cases[*v.first_failure].text,
            "custom probe json-schema (1053 tokens) passes at baseline and fails under the configuration "
            "(custom.per_probe)");
  EXPECT_NE(strict->LostCustomProbesNote().find("fails the configuration for each"), std::string::npos);

  const auto warn = Gate({{"k=q8_0,v=q4_0", Buckets()}}, {p});  // kPolicy says nothing: a warning
  ASSERT_TRUE(warn.ok()) << warn.error().message;
  EXPECT_EQ(warn->configs[0].outcome, CaseOutcome::kPass);
  EXPECT_TRUE(warn->configs[0].pass);
  EXPECT_EQ(warn->configs[0].lost_custom_probes, v.lost_custom_probes);
  const auto lost = std::find_if(warn->configs[0].cases.begin(), warn->configs[0].cases.end(),
                                 [](const GateCase& c) { return c.criterion == "custom.per_probe"; });
  ASSERT_NE(lost, warn->configs[0].cases.end());
  EXPECT_EQ(lost->outcome, CaseOutcome::kWarn);

  p.custom[0].pass = true;
  const auto none = Gate({{"k=q8_0,v=q4_0", Buckets()}}, {p}, fails);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->configs[0].pass);
  EXPECT_TRUE(none->configs[0].lost_custom_probes.empty());
  const auto rule = std::find_if(none->configs[0].cases.begin(), none->configs[0].cases.end(),
                                 [](const GateCase& c) { return c.criterion == "custom.per_probe"; });
  ASSERT_NE(rule, none->configs[0].cases.end());
  EXPECT_EQ(rule->outcome, CaseOutcome::kPass);
  EXPECT_EQ(rule->detail, "every custom probe the baseline passes passes: 2 of 2");
}

// With 5 custom probes McNemar can never reach 0.05 (all 5 lost, none recovered: p = 0.0625), and
// the case says so instead of reading as a quiet pass.
TEST(DecideGate, ASignificanceRuleThatCannotBeReachedSaysSo) {
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q4_0");
  p.pooled.push_back({"custom", 5, 5, 0, 0.0625, false, /*baseline_pass=*/5});
  const auto r = Gate({{"k=q8_0,v=q4_0", Buckets()}}, {p});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto c = std::find_if(r->configs[0].cases.begin(), r->configs[0].cases.end(),
                              [](const GateCase& k) { return k.criterion == "custom.fail_on_significant"; });
  ASSERT_NE(c, r->configs[0].cases.end());
  EXPECT_NE(c->text.find("cannot be significant: with 5 instances the baseline passes, the smallest possible p is "
                         "0.0625 >= alpha 0.05"),
            std::string::npos)
      << c->text;
}

// Results without the intervals (an older eval) cannot be judged as the policy says: bad input.
TEST(DecideGate, ResultsWithoutIntervalsAreBadInput) {
  nlohmann::json eval = testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets()}});
  eval["configs"][0]["buckets"][1].erase("top1_agree_ci95");
  const fs::path dir = testing::MakeTempDir("gate");
  const GateInputs in =
      Load({testing::WriteResults(dir / "eval", eval),
            testing::WriteResults(dir / "probe", testing::SyntheticProbeResults({GoodProbes("k=q8_0,v=q8_0")}))});
  const auto r = EvaluateGate(Policy(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_NE(r.error().message.find("k=q8_0,v=q8_0 has no top1_agree_ci95 for context 17-32"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("rerun kvaudit eval"), std::string::npos) << r.error().message;
}

TEST(DecideGate, ARequiredFamilyMissingIsBadInput) {
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q8_0");
  p.pooled.erase(p.pooled.begin());  // no needle
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {p});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the policy requires the probe family needle but k=q8_0,v=q8_0 has none in"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("--family needle"), std::string::npos) << r.error().message;
}

TEST(DecideGate, AFamilyNotRequiredAndMissingIsNotJudged) {
  ProbeConfigResult p = GoodProbes("k=q8_0,v=q8_0");
  p.variance_rows = 0, p.variance_pairs = 0, p.drift_kl_mean.clear();
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {p});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->configs[0].pass);
  ASSERT_EQ(r->configs[0].not_judged.size(), 1u);
  EXPECT_EQ(r->configs[0].not_judged[0].rfind("constraint, custom, variance, drift: not in ", 0), 0u)
      << r->configs[0].not_judged[0];
}

TEST(DecideGate, AMetricThePolicyNeedsButTheResultsLackIsBadInput) {
  const fs::path dir = testing::MakeTempDir("gate-p99");
  nlohmann::json eval = testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets()}});
  eval["configs"][0]["buckets"][1].erase("kld_p99");
  const GateInputs in =
      Load({testing::WriteResults(dir / "eval", eval),
            testing::WriteResults(dir / "probe", testing::SyntheticProbeResults({GoodProbes("k=q8_0,v=q8_0")}))});
  const auto r = EvaluateGate(Policy(), in);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("k=q8_0,v=q8_0 has no kld_p99 for context 17-32"), std::string::npos)
      << r.error().message;
}

TEST(DecideGate, AConfigurationWithoutEvalResultsIsBadInputWhenFidelityIsJudged) {
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {GoodProbes("k=q8_0,v=q8_0"), GoodProbes("k=q4_0,v=q4_0")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("k=q4_0,v=q4_0 has no eval results"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("kvaudit eval --kv k=q4_0,v=q4_0"), std::string::npos) << r.error().message;
}

// A configuration probed through a server is named by the server, not by a --kv spec: the hint
// does not tell the user to run `kvaudit eval --kv q4` (an endpoint's name), but what can judge it.
TEST(DecideGate, AnEndpointWithoutEvalResultsGetsAHintItCanFollow) {
  ProbeConfigResult remote = GoodProbes("q4");
  remote.endpoint = true;
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {GoodProbes("k=q8_0,v=q8_0"), remote});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find("kvaudit eval --kv"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("q4 was probed through an endpoint and has no eval results"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("hint: judge its probes with a policy without [fidelity]"), std::string::npos)
      << r.error().message;
}

TEST(DecideGate, AlphaMustBeTheProbeRunsAlpha) {
  const auto r = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {GoodProbes("k=q8_0,v=q8_0")},
                      std::string(kPolicy) + "[probes.exact]\ncache_induced_rate_max = 0.5\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto bad = Gate({{"k=q8_0,v=q8_0", Buckets()}}, {GoodProbes("k=q8_0,v=q8_0")},
                        "[probes]\nalpha = 0.01\nfail_on_significant = true\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("probes.alpha = 0.01 in test.toml but the probe run used alpha 0.05"),
            std::string::npos)
      << bad.error().message;
}

TEST(DecideGate, AnAuditDirectoryHoldsEvalAndProbe) {
  const fs::path dir = testing::MakeTempDir("gate-audit");
  testing::WriteResults(dir / "eval", testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets()}}));
  testing::WriteResults(dir / "probe", testing::SyntheticProbeResults({GoodProbes("k=q8_0,v=q8_0")}));
  const GateInputs in = Load({dir});
  EXPECT_EQ(in.evals.size(), 1u);
  EXPECT_EQ(in.probes.size(), 1u);
  const auto r = EvaluateGate(Policy(), in);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->inputs.size(), 2u);
}

TEST(DecideGate, ResultsOfAnotherSchemaOrNoResultsAreBadInput) {
  const fs::path dir = testing::MakeTempDir("gate-schema");
  nlohmann::json eval = testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets()}});
  eval["schema_version"] = 3;
  testing::WriteResults(dir / "v3", eval);
  const auto r = LoadGateInputs({(dir / "v3").string()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("schema_version 3 is not the 2 this gate reads, " +
                                   (dir / "v3" / "results.json").string()),
            std::string::npos)
      << r.error().message;
  fs::create_directories(dir / "empty");
  const auto none = LoadGateInputs({(dir / "empty").string()});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("holds no eval or probe results.json"), std::string::npos)
      << none.error().message;
  eval["schema_version"] = 2;
  eval["configs"][0].erase("spec");
  testing::WriteResults(dir / "nospec", eval);
  const auto nospec = LoadGateInputs({(dir / "nospec").string()});
  ASSERT_FALSE(nospec.ok());
  EXPECT_NE(nospec.error().message.find("configs[0].spec is missing"), std::string::npos) << nospec.error().message;
}

TEST(DecideGate, ResultsOfAnotherModelAreBadInput) {
  const fs::path dir = testing::MakeTempDir("gate-model");
  testing::WriteResults(dir / "eval", testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets()}}, "aaaa"));
  testing::WriteResults(dir / "probe", testing::SyntheticProbeResults({GoodProbes("k=q8_0,v=q8_0")}, "bbbb"));
  const GateInputs in = Load({dir});
  const Status two = CheckOneModel(in, {}, "");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("are from different models (model_hash bbbb vs aaaa)"), std::string::npos)
      << two.error().message;
  const GateInputs one = Load({dir / "eval"});
  EXPECT_TRUE(CheckOneModel(one, {}, "").ok());
  const Status other = CheckOneModel(one, {.weights = "cccc", .config_tokenizer = ""}, "models/x");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("is from another model (model_hash aaaa, --model models/x is cccc)"),
            std::string::npos)
      << other.error().message;
  EXPECT_TRUE(CheckOneModel(one, {.weights = "aaaa", .config_tokenizer = ""}, "models/x").ok());
}

// docs/decision.md "Gate": an all-remote probe hashes the config and tokenizer ("config+tokenizer"),
// an in-process eval the weights. Without --model the two kinds are refused in one line; with it
// each file is compared with --model's hash of its own kind.
TEST(DecideGate, HashKindsAreComparedLikeWithLike) {
  const fs::path dir = testing::MakeTempDir("gate-kinds");
  testing::WriteResults(dir / "eval", testing::SyntheticEvalResults({{"k=q8_0,v=q8_0", Buckets()}}, "aaaa"));
  nlohmann::json probe = testing::SyntheticProbeResults({GoodProbes("k=q8_0,v=q8_0")}, "tttt");
  probe["model_hash_kind"] = "config+tokenizer";
  testing::WriteResults(dir / "probe", probe);
  const GateInputs in = Load({dir});
  ASSERT_EQ(in.evals.size(), 1u);
  EXPECT_EQ(in.evals[0].model_hash_kind, "weights");  // absent in the file: written before kinds existed
  ASSERT_EQ(in.probes.size(), 1u);
  EXPECT_EQ(in.probes[0].model_hash_kind, "config+tokenizer");
  const Status mixed = CheckOneModel(in, {}, "");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(
      mixed.error().message.find("(model_hash of its config+tokenizer) and " +
                                 (dir / "eval" / "results.json").string() + " (of its weights) cannot be compared"),
      std::string::npos)
      << mixed.error().message;
  EXPECT_NE(mixed.error().message.find("hint: pass --model"), std::string::npos);
  EXPECT_TRUE(CheckOneModel(in, {.weights = "aaaa", .config_tokenizer = "tttt"}, "models/x").ok());
  // The kind's own hash is what counts: the probe's equals --model's weights hash, not its config+tokenizer one.
  const Status crossed = CheckOneModel(in, {.weights = "aaaa", .config_tokenizer = "aaaa"}, "models/x");
  ASSERT_FALSE(crossed.ok());
  EXPECT_NE(crossed.error().message.find(
                "is from another model (model_hash tttt of its config+tokenizer, --model models/x is aaaa)"),
            std::string::npos)
      << crossed.error().message;
  // Two all-remote results of different models: the usual line, with the kind named.
  nlohmann::json other = probe;
  other["model_hash"] = "uuuu";
  testing::WriteResults(dir / "probe2", other);
  const Status two = CheckOneModel(Load({dir / "probe", dir / "probe2"}), {}, "");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("are from different models (model_hash uuuu vs tttt of its config+tokenizer)"),
            std::string::npos)
      << two.error().message;
  probe["model_hash_kind"] = "tokens";
  testing::WriteResults(dir / "bad", probe);
  const Status unknown = CheckOneModel(Load({dir / "bad", dir / "eval"}), {}, "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("model_hash_kind 'tokens' is not known"), std::string::npos)
      << unknown.error().message;
}

}  // namespace
}  // namespace kvaudit
