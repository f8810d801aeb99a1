// The gate against a reference configuration (policy relative_to, docs/decision.md "Relative to a
// reference"): every fidelity statistic and each checked family's cache-induced rate judged
// against the far end of the reference's interval, the reference found by its spec or, under a
// target's engine, by the cache it stores; what is bad input.
#include <gtest/gtest.h>

#include <filesystem>

#include "decide/acceptance/policy.h"
#include "decide/gate/gate.h"
#include "decide/gate/gate_inputs.h"
#include "support/fixtures.h"
#include "support/gate_results.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::SyntheticBucket;

constexpr const char* kRelative = "relative_to = \"k=q8_0,v=q8_0\"\n[probes.needle]\nrequired = true\n";

// Two buckets of 400 tokens in 4 windows with the given mean KLD and its interval; the other
// statistics are points equal for every configuration (so they pass against the reference).
std::vector<SyntheticBucket> Kld(double kld, Interval ci) {
  std::vector<SyntheticBucket> b = {{1, 64, kld, 0.01, 0.995, 1.001, 400}, {65, 128, kld, 0.01, 0.995, 1.001, 400}};
  for (SyntheticBucket& x : b) x.kld_ci = ci;
  return b;
}

ProbeConfigResult Needles(const std::string& spec, int lost, int n = 40) {
  return {spec, {{"needle", n, lost, 0, 1.0, false}}, 0, 0, 0, {}};
}

Expected<GateReport> Gate(const std::vector<testing::SyntheticEvalConfig>& eval,
                          const std::vector<ProbeConfigResult>& probe, const std::string& policy = kRelative) {
  const fs::path dir = testing::MakeTempDir("gate-relative");
  testing::WriteResults(dir / "eval", testing::SyntheticEvalResults(eval));
  testing::WriteResults(dir / "probe", testing::SyntheticProbeResults(probe));
  const auto in = LoadGateInputs({(dir / "eval").string(), (dir / "probe").string()});
  KV_CHECK_MSG(in.ok(), in.ok() ? "" : in.error().message.c_str());
  const auto p = ParsePolicy(policy, "test.toml");
  KV_CHECK_MSG(p.ok(), p.ok() ? "" : p.error().message.c_str());
  return EvaluateGate(*p, *in);
}

const GateCase* CaseOf(const ConfigVerdict& v, const std::string& criterion, const std::string& scope) {
  for (const GateCase& c : v.cases) {
    if (c.criterion == criterion && c.scope == scope) return &c;
  }
  return nullptr;
}

// The reference passes against itself; a configuration whose interval lies below the reference's
// upper end passes, one wholly beyond it fails, one that straddles it is INCONCLUSIVE with an
// estimate in which both intervals narrow.
TEST(DecideGateRelative, EachStatisticIsJudgedAgainstTheFarEndOfTheReferencesInterval) {
  const auto r = Gate({{"k=q8_0,v=q8_0", Kld(0.0025, {0.0015, 0.0035})},
                       {"k=q5_1,v=q5_1", Kld(0.002, {0.0012, 0.0034})},
                       {"k=q8_0,v=q4_0", Kld(0.003, {0.002, 0.004})},
                       {"k=q4_0,v=q4_0", Kld(0.01, {0.008, 0.012})}},
                      {Needles("k=q8_0,v=q8_0", 0), Needles("k=q5_1,v=q5_1", 0), Needles("k=q8_0,v=q4_0", 0),
                       Needles("k=q4_0,v=q4_0", 0)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->reference, "k=q8_0,v=q8_0");
  ASSERT_EQ(r->configs.size(), 4u);
  // 2 buckets × 4 statistics, the needle significance... none here: only the needle rate.
  EXPECT_EQ(r->configs[0].cases.size(), 2u * 4u + 1u);
  EXPECT_EQ(r->configs[0].outcome, CaseOutcome::kPass);
  const GateCase* self = CaseOf(r->configs[0], "kld_mean.relative_to", "context 1-64");
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->threshold, 0.0035);
  EXPECT_NE(self->text.find("; the reference itself"), std::string::npos) << self->text;
  EXPECT_EQ(r->configs[1].outcome, CaseOutcome::kPass);

  const ConfigVerdict& k8v4 = r->configs[2];
  EXPECT_EQ(k8v4.outcome, CaseOutcome::kInconclusive);
  EXPECT_FALSE(k8v4.pass);  // a policy file without `inconclusive` fails it
  // d = 0.0005 worse; the candidate's better-side half-width 0.001 plus the reference's worse-side
  // 0.001 must fit in d: (0.002 / 0.0005)² = 16 times the 4 windows.
  EXPECT_EQ(k8v4.cases[*k8v4.first_failure].text,
            "kld_mean 0.003 [0.002, 0.004] straddles 0.0035 (kld_mean.relative_to), context 1-64: 400 tokens in 4 "
            "windows; k=q8_0,v=q8_0: 0.0025 [0.0015, 0.0035], the upper end; about 60 more windows would likely "
            "decide it");

  const ConfigVerdict& q4 = r->configs[3];
  EXPECT_EQ(q4.outcome, CaseOutcome::kFail);
  EXPECT_EQ(q4.cases[*q4.first_failure].criterion, "kld_mean.relative_to");
  EXPECT_FALSE(q4.safe_up_to.has_value());

  // Under inconclusive = "warn" (the relative preset's) the undecided configuration passes.
  const auto warn = Gate(
      {{"k=q8_0,v=q8_0", Kld(0.0025, {0.0015, 0.0035})}, {"k=q8_0,v=q4_0", Kld(0.003, {0.002, 0.004})}},
      {Needles("k=q8_0,v=q8_0", 0), Needles("k=q8_0,v=q4_0", 0)}, std::string("inconclusive = \"warn\"\n") + kRelative);
  ASSERT_TRUE(warn.ok()) << warn.error().message;
  EXPECT_TRUE(warn->configs[1].pass);
}

// A top-1 agreement is a minimum: the threshold is the lower end of the reference's interval.
TEST(DecideGateRelative, TopOneAgreementIsJudgedAgainstTheLowerEnd) {
  std::vector<SyntheticBucket> ref = Kld(0.001, {0.001, 0.001}), worse = ref, better = ref;
  for (SyntheticBucket& x : ref) x.top1_agree = 0.98, x.top1_ci = Interval{0.97, 0.99};
  for (SyntheticBucket& x : worse) x.top1_agree = 0.95, x.top1_ci = Interval{0.94, 0.96};
  for (SyntheticBucket& x : better) x.top1_agree = 0.99, x.top1_ci = Interval{0.985, 0.995};
  const auto r = Gate({{"k=q8_0,v=q8_0", ref}, {"k=q4_0,v=q4_0", worse}, {"k=q5_1,v=q5_1", better}},
                      {Needles("k=q8_0,v=q8_0", 0), Needles("k=q4_0,v=q4_0", 0), Needles("k=q5_1,v=q5_1", 0)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GateCase* c = CaseOf(r->configs[1], "top1_agree.relative_to", "context 65-128");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->threshold, 0.97);
  EXPECT_EQ(c->outcome, CaseOutcome::kFail);
  EXPECT_NE(c->text.find("k=q8_0,v=q8_0: 0.98 [0.97, 0.99], the lower end"), std::string::npos) << c->text;
  EXPECT_EQ(r->configs[2].outcome, CaseOutcome::kPass);
}

// The needle rate against the upper end of the reference's exact interval: 0 of 40 lost is at most
// 8.81 %; 10 of 40 is at least 12.7 % (FAIL); 2 of 40 straddles it.
TEST(DecideGateRelative, ProbeRatesAreJudgedAgainstTheReferencesExactInterval) {
  const std::vector<SyntheticBucket> b = Kld(0.001, {0.001, 0.001});
  const auto r = Gate({{"k=q8_0,v=q8_0", b}, {"k=q8_0,v=q4_0", b}, {"k=q4_0,v=q4_0", b}},
                      {Needles("k=q8_0,v=q8_0", 0), Needles("k=q8_0,v=q4_0", 2), Needles("k=q4_0,v=q4_0", 10)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GateCase* self = CaseOf(r->configs[0], "needle.relative_to", "family needle");
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->outcome, CaseOutcome::kPass);
  EXPECT_NEAR(self->threshold, 0.0881, 1e-4);
  const GateCase* two = CaseOf(r->configs[1], "needle.relative_to", "family needle");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->outcome, CaseOutcome::kInconclusive);
  EXPECT_NE(two->text.find("2 cache-induced failures in 40 pooled instances; k=q8_0,v=q8_0: 0 of 40 [0, 0.0880973], "
                           "the upper end; more instances would narrow both intervals"),
            std::string::npos)
      << two->text;
  EXPECT_EQ(CaseOf(r->configs[2], "needle.relative_to", "family needle")->outcome, CaseOutcome::kFail);
}

// Under a target the results name the reference with its engine: a policy's plain spec finds the
// one configuration storing the same cache; two such (different engines) are ambiguous.
TEST(DecideGateRelative, TheReferenceIsFoundUnderTheTargetsEngine) {
  const std::vector<SyntheticBucket> b = Kld(0.001, {0.0008, 0.0012});
  const auto r = Gate({{"k=q8_0,v=q8_0,engine=llama.cpp", b}, {"k=q4_0,v=q4_0,engine=llama.cpp", b}},
                      {Needles("k=q8_0,v=q8_0,engine=llama.cpp", 0), Needles("k=q4_0,v=q4_0,engine=llama.cpp", 0)});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->reference, "k=q8_0,v=q8_0,engine=llama.cpp");
  EXPECT_EQ(r->configs[1].outcome, CaseOutcome::kPass);

  const auto two = Gate({{"k=q8_0,v=q8_0,engine=llama.cpp", b}, {"k=q8_0,v=q8_0,engine=native", b}},
                        {Needles("k=q8_0,v=q8_0,engine=llama.cpp", 0), Needles("k=q8_0,v=q8_0,engine=native", 0)});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("relative_to = \"k=q8_0,v=q8_0\" (test.toml:1:15) matches "
                                     "k=q8_0,v=q8_0,engine=llama.cpp and k=q8_0,v=q8_0,engine=native"),
            std::string::npos)
      << two.error().message;
  // A reference that writes its engine is matched exactly.
  const auto exact = Gate({{"k=q8_0,v=q8_0,engine=llama.cpp", b}, {"k=q8_0,v=q8_0,engine=native", b}},
                          {Needles("k=q8_0,v=q8_0,engine=llama.cpp", 0), Needles("k=q8_0,v=q8_0,engine=native", 0)},
                          "relative_to = \"k=q8_0,v=q8_0,engine=native\"\n");
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ(exact->reference, "k=q8_0,v=q8_0,engine=native");
}

TEST(DecideGateRelative, AReferenceMissingOrMeasuredOnOtherTokensIsBadInput) {
  const std::vector<SyntheticBucket> b = Kld(0.001, {0.0008, 0.0012});
  const auto missing = Gate({{"k=q4_0,v=q4_0", b}}, {Needles("k=q4_0,v=q4_0", 0)});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("relative_to = \"k=q8_0,v=q8_0\" (test.toml:1:15) is not among the "
                                         "results' configurations; hint: measure it with the others"),
            std::string::npos)
      << missing.error().message;

  std::vector<SyntheticBucket> fewer = b;
  fewer[1].tokens = 300;
  const auto other = Gate({{"k=q8_0,v=q8_0", fewer}, {"k=q4_0,v=q4_0", b}},
                          {Needles("k=q8_0,v=q8_0", 0), Needles("k=q4_0,v=q4_0", 0)});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("were not scored on the same buckets and tokens"), std::string::npos)
      << other.error().message;

  const auto instances = Gate({{"k=q8_0,v=q8_0", b}, {"k=q4_0,v=q4_0", b}},
                              {Needles("k=q8_0,v=q8_0", 0, 20), Needles("k=q4_0,v=q4_0", 0)});
  ASSERT_FALSE(instances.ok());
  EXPECT_NE(instances.error().message.find("the reference k=q8_0,v=q8_0 has 20 needle instances, k=q4_0,v=q4_0 40"),
            std::string::npos)
      << instances.error().message;
}

// The preset needs no absolute number: llama.cpp's q8_0 cache is the yardstick.
TEST(DecideGateRelative, TheRelativePresetComparesWithQ8) {
  const auto p = LoadPolicy("relative");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_TRUE(p->relative_to.has_value());
  EXPECT_EQ(p->relative_to->spec(), "k=q8_0,v=q8_0");
  EXPECT_FALSE(p->fidelity.any());
  EXPECT_FALSE(p->InconclusiveFails());
  EXPECT_TRUE(p->Required(ProbeFamily::kNeedle));
  EXPECT_EQ(p->CriteriaOf(ProbeFamily::kNeedle), 2);  // significance and the relative rate

  const auto file = ParsePolicy("extends = \"strict\"\nrelative_to = \"kv=q8_0\"\n", "p.toml");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->relative_to->spec(), "k=q8_0,v=q8_0");  // canonical, as the results name it
  EXPECT_TRUE(file->fidelity.any());                      // and strict's thresholds as well

  const auto bad = ParsePolicy("relative_to = \"k=q9_0\"\n", "p.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("relative_to \"k=q9_0\""), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("p.toml:1:15; hint: "), std::string::npos) << bad.error().message;
  const auto number = ParsePolicy("relative_to = 8\n", "p.toml");
  ASSERT_FALSE(number.ok());
  EXPECT_NE(number.error().message.find("relative_to must be a string, not an integer, p.toml:1:15"), std::string::npos)
      << number.error().message;
}

}  // namespace
}  // namespace kvaudit
