// The acceptance policy parser (decide/acceptance/policy.h, docs/decision.md "Acceptance policy"): every kind
// of error is one line, exit 2, naming the key and its file:line:col with a hint; the presets parse
// with the same parser; extends + override; how ranges set a bucket's thresholds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "decide/acceptance/policy.h"
#include "decide/acceptance/policy_presets.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

// The policy's error, checked for the one-line rule and for every expected piece.
void ExpectError(const std::string& text, const std::vector<std::string>& pieces) {
  const auto p = ParsePolicy(text, "policy.toml");
  ASSERT_FALSE(p.ok()) << "accepted:\n" << text;
  const Error& e = p.error();
  EXPECT_EQ(e.exit_code(), 2);
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("; hint: "), std::string::npos) << e.message;
  for (const std::string& piece : pieces)
    EXPECT_NE(e.message.find(piece), std::string::npos) << piece << " not in: " << e.message;
}

TEST(DecidePolicy, SyntaxErrorNamesThePosition) {
  ExpectError("[fidelity]\nkld_mean_max = = 0.1\n", {"TOML syntax error", "policy.toml:2:"});
  ExpectError("[fidelity\n", {"TOML syntax error", "policy.toml:1:"});
}

TEST(DecidePolicy, UnknownKeyHintsTheNearestKey) {
  ExpectError("[fidelity]\nkld_mean_mx = 0.005\n",
              {"unknown key fidelity.kld_mean_mx", "policy.toml:2:1", "did you mean kld_mean_max?"});
  ExpectError("[probes.needle]\nrequierd = true\n", {"unknown key probes.needle.requierd", "did you mean required?"});
  ExpectError("[probes.neadle]\nrequired = true\n", {"unknown key probes.neadle", "did you mean needle?"});
  // Far from every key: the table's keys are listed instead.
  ExpectError("[fidelity]\nwhatever = 1\n", {"unknown key fidelity.whatever", "the keys here are kld_mean_max"});
  // A key of another family's table is unknown here.
  ExpectError("[probes.variance]\nkl_mean_max = 0.1\n", {"unknown key probes.variance.kl_mean_max"});
}

// TOML strings and quoted keys may hold escaped control characters; an error quoting them stays
// one line, with each written as an escape (found by policy_fuzz: extends = "par\noid").
TEST(DecidePolicy, ControlCharactersInQuotedTextAreEscapedInErrors) {
  const auto ext = ParsePolicy("extends = \"par\\noid\"\n", "policy.toml");
  ASSERT_FALSE(ext.ok());
  EXPECT_EQ(
      ext.error().message,
      "extends = \"par\\noid\" names no preset, policy.toml:1:11; hint: the presets are strict, balanced, relative");
  const auto key = ParsePolicy("[probes.\"nee\\u0007dle\"]\nrequired = true\n", "policy.toml");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("unknown key probes.nee\\x07dle"), std::string::npos) << key.error().message;
  EXPECT_EQ(key.error().exit_code(), 2);
}

TEST(DecidePolicy, WrongTypeNamesKeyAndType) {
  ExpectError("[fidelity]\nkld_mean_max = \"0.005\"\n",
              {"fidelity.kld_mean_max must be a number, not a string", "policy.toml:2:16"});
  ExpectError("target_context = 4096.0\n[fidelity]\nkld_mean_max = 0.1\n",
              {"target_context must be an integer, not a float"});
  ExpectError("[probes.needle]\nrequired = 1\ncache_induced_rate_max = 0\n",
              {"probes.needle.required must be true or false"});
  ExpectError("fidelity = 3\n", {"fidelity must be a table, not an integer"});
  ExpectError("extends = 1\n", {"extends must be a string"});
  ExpectError("[fidelity]\nrange = 5\n", {"fidelity.range must be an array of tables"});
}

TEST(DecidePolicy, OutOfRangeValuesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[fidelity]\nkld_mean_max = -0.001\n", "fidelity.kld_mean_max = -0.001 is out of range"},
      {"[fidelity]\nkld_p99_max = -1\n", "fidelity.kld_p99_max = -1 is out of range"},
      {"[fidelity]\ntop1_agree_min = 1.5\n", "fidelity.top1_agree_min = 1.5 is out of range"},
      {"[fidelity]\nppl_ratio_max = 0.99\n", "fidelity.ppl_ratio_max = 0.99 is out of range"},
      {"[fidelity]\nkld_mean_max = nan\n", "fidelity.kld_mean_max must be a finite number"},
      {"[fidelity]\nkld_mean_max = inf\n", "fidelity.kld_mean_max must be a finite number"},
      {"[probes]\nalpha = 0\nfail_on_significant = true\n", "probes.alpha = 0 is out of range"},
      {"[probes]\nalpha = 1.0\nfail_on_significant = true\n", "probes.alpha = 1 is out of range"},
      {"[probes.needle]\ncache_induced_rate_max = 1.01\n",
       "probes.needle.cache_induced_rate_max = 1.01 is out of range"},
      {"[probes.variance]\nsame_seed_divergence_max = -0.2\n", "same_seed_divergence_max = -0.2 is out of range"},
      {"[probes.drift]\nkl_mean_max = -0.5\n", "probes.drift.kl_mean_max = -0.5 is out of range"},
      {"target_context = 0\n[fidelity]\nkld_mean_max = 0.1\n", "target_context = 0 is out of range"},
      {"[fidelity]\nkld_mean_max = 0.1\nmin_bucket_tokens = 0\n", "fidelity.min_bucket_tokens = 0 is out of range"},
      {"[[fidelity.range]]\nfrom = -3\nto = 5\nkld_mean_max = 0.1\n", "fidelity.range[0].from = -3 is out of range"},
  };
  for (const auto& [text, piece] : cases) {
    SCOPED_TRACE(text);
    ExpectError(text, {piece, "policy.toml:"});
  }
}

TEST(DecidePolicy, OverlappingRangesAreAContradiction) {
  ExpectError(
      "[[fidelity.range]]\nfrom = 1\nto = 1024\nkld_mean_max = 0.002\n"
      "[[fidelity.range]]\nfrom = 1000\nto = 2000\nkld_mean_max = 0.004\n",
      {"fidelity ranges 1..1024 and 1000..2000 overlap", "policy.toml:1:1", "policy.toml:5:1"});
}

TEST(DecidePolicy, ReversedRangeIsAContradiction) {
  ExpectError("[[fidelity.range]]\nfrom = 2048\nto = 1024\nkld_mean_max = 0.002\n",
              {"fidelity.range[0] is reversed (from 2048 > to 1024)", "policy.toml:1:1"});
}

TEST(DecidePolicy, RangeAfterTargetContextIsAContradiction) {
  ExpectError("target_context = 2048\n[[fidelity.range]]\nfrom = 4097\nto = 8192\nkld_mean_max = 0.002\n",
              {"fidelity range 4097..8192 starts after target_context = 2048", "policy.toml:2:1", "policy.toml:1:18"});
}

TEST(DecidePolicy, RangeWithoutThresholdOrEndIsRefused) {
  ExpectError("[[fidelity.range]]\nfrom = 1\nto = 16\n", {"fidelity.range[0] sets no threshold"});
  ExpectError("[[fidelity.range]]\nfrom = 1\nkld_mean_max = 0.1\n", {"fidelity.range[0] has no to"});
}

TEST(DecidePolicy, RequiredFamilyWithoutCriterionIsAContradiction) {
  ExpectError("[fidelity]\nkld_mean_max = 0.1\n[probes.needle]\nrequired = true\n",
              {"probes.needle.required = true but the family has no criterion", "policy.toml:3:"});
  ExpectError("[fidelity]\nkld_mean_max = 0.1\n[probes.drift]\nrequired = true\n",
              {"probes.drift.required = true but the family has no criterion", "kl_mean_max"});
}

TEST(DecidePolicy, FamilyNamedTwiceInAnotherSpelling) {
  ExpectError(
      "[probes.needle]\ncache_induced_rate_max = 0\n[probes.Needle]\nrequired = true\n",
      {"probes.Needle names the family needle again (first as probes.needle at policy.toml:1:", "policy.toml:3:"});
}

TEST(DecidePolicy, UnknownExtendsHintsThePreset) {
  ExpectError("extends = \"balnced\"\n",
              {"extends = \"balnced\" names no preset", "policy.toml:1:11", "did you mean balanced?"});
  ExpectError("extends = \"paranoid\"\n", {"the presets are strict, balanced"});
}

// toml++ 3.3.0 has undefined behaviour for some non-ASCII code points where it looks for
// whitespace (decide/acceptance/policy_text.h); it is only ever given ASCII.
TEST(DecidePolicy, NonAsciiOnlyInComments) {
  // The crash the fuzzer found: U+FEF7 at the start of the file.
  ExpectError("\xEF\xBB\xB7[fidelity]\nkld_mean_max = 0.1\n",
              {"non-ASCII character U+FEF7 outside a comment, policy.toml:1:1"});
  // toml++ issue 190: U+00A7 after a line-ending backslash of a multi-line string.
  ExpectError("[fidelity]\nkld_mean_max = 0.1\nx = \"\"\"\\\n\xC2\xA7\"\"\"\n",
              {"U+00A7 outside a comment, policy.toml:4:1"});
  ExpectError("extends = \"bal\xC3\xA9\"\n", {"U+00E9 outside a comment, policy.toml:1:15"});
  ExpectError("[fidelity] # \xFF\nkld_mean_max = 0.1\n", {"invalid UTF-8 (byte 0xFF), policy.toml:1:14"});
  ExpectError("[fidelity] # \xC0\xAF overlong\nkld_mean_max = 0.1\n", {"invalid UTF-8 (byte 0xC0)"});
  // In comments anything goes (a note such as "ΔPPL ≤ +0.5 %"), '#' inside a
  // string does not start one, and a byte-order mark is dropped: positions stay the editor's.
  const auto p = ParsePolicy(
      "\xEF\xBB\xBF# caf\xC3\xA9 \xCE\x94PPL \xE2\x89\xA4 +0.5 %\n[fidelity]\n"
      "kld_mean_max = 0.005 # \xC2\xA7 \xEF\xBB\xB7\n",
      "policy.toml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->fidelity[FidelityMetric::kKldMean], 0.005);
  ExpectError("extends = \"a#\xC3\xA9\"\n", {"U+00E9 outside a comment, policy.toml:1:14"});
  ExpectError("# \xC3\xA9\n[fidelity]\nkld_mean_mx = 0.1\n", {"unknown key fidelity.kld_mean_mx, policy.toml:3:1"});
}

TEST(DecidePolicy, PolicyWithoutCriterionIsRefused) {
  ExpectError("# nothing\n", {"the policy sets no criterion"});
  ExpectError("target_context = 4096\n[probes]\nalpha = 0.05\n", {"the policy sets no criterion"});
}

TEST(DecidePolicy, EveryPresetParsesAndJudgesSomething) {
  ASSERT_EQ(PresetNames(), (std::vector<std::string>{"strict", "balanced", "relative"}));
  for (const std::string& name : PresetNames()) {
    SCOPED_TRACE(name);
    const auto p = LoadPolicy(name);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->name, name);
    // Every fidelity statistic is judged: by a threshold each, or against the reference.
    EXPECT_NE(p->fidelity.any(), p->relative_to.has_value());
    for (size_t m = 0; m < kNumFidelityMetrics && !p->relative_to; ++m)
      EXPECT_TRUE(p->fidelity.limit[m].has_value()) << m;
    EXPECT_TRUE(p->Required(ProbeFamily::kNeedle));
    EXPECT_GT(p->CriteriaOf(ProbeFamily::kNeedle), 0);
  }
  // strict is stricter than balanced on every fidelity threshold.
  const auto strict = LoadPolicy("strict"), balanced = LoadPolicy("balanced");
  ASSERT_TRUE(strict.ok() && balanced.ok());
  for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
    const bool is_min = Info(static_cast<FidelityMetric>(m)).is_min;
    const double s = *strict->fidelity.limit[m], b = *balanced->fidelity.limit[m];
    EXPECT_TRUE(is_min ? s > b : s < b) << Info(static_cast<FidelityMetric>(m)).key;
  }
}

// Where an INCONCLUSIVE case falls: strict fails it, balanced warns, a file that does not say fails
// it, a file that extends a preset keeps the preset's unless it says otherwise.
TEST(DecidePolicy, InconclusiveIsFailOrWarn) {
  EXPECT_TRUE(LoadPolicy("strict")->InconclusiveFails());
  EXPECT_FALSE(LoadPolicy("balanced")->InconclusiveFails());
  EXPECT_TRUE(ParsePolicy("[fidelity]\nkld_mean_max = 0.01\n", "p.toml")->InconclusiveFails());
  EXPECT_FALSE(ParsePolicy("extends = \"balanced\"\n", "p.toml")->InconclusiveFails());
  EXPECT_TRUE(ParsePolicy("extends = \"balanced\"\ninconclusive = \"fail\"\n", "p.toml")->InconclusiveFails());
  ExpectError("inconclusive = \"maybe\"\n[fidelity]\nkld_mean_max = 0.01\n",
              {"inconclusive must be \"fail\" or \"warn\"", "policy.toml:1:16", "passes with a warning"});
  ExpectError("inconclusive = true\n", {"inconclusive must be", "policy.toml:1:16"});
}

TEST(DecidePolicy, PerProbeIsFailOrWarnAndOnlyForCustomProbes) {
  EXPECT_TRUE(LoadPolicy("strict")->LostCustomProbeFails());
  EXPECT_FALSE(LoadPolicy("balanced")->LostCustomProbeFails());
  EXPECT_FALSE(ParsePolicy("[fidelity]\nkld_mean_max = 0.01\n", "p.toml")->LostCustomProbeFails());
  EXPECT_TRUE(
      ParsePolicy("extends = \"balanced\"\n[probes.custom]\nper_probe = \"fail\"\n", "p.toml")->LostCustomProbeFails());
  ExpectError("[probes.custom]\nper_probe = \"sometimes\"\n",
              {"probes.custom.per_probe must be \"fail\" or \"warn\"", "policy.toml:2:13"});
  ExpectError("[probes.needle]\nper_probe = \"fail\"\n", {"unknown key probes.needle.per_probe", "policy.toml:2:1"});
}

TEST(DecidePolicy, ExtendsTakesThePresetAndTheFileOverrides) {
  const auto preset = LoadPolicy("strict");
  ASSERT_TRUE(preset.ok());
  const auto p = ParsePolicy(
      "extends = \"strict\"\ntarget_context = 2048\n[fidelity]\nkld_mean_max = 0.01\n"
      "[probes.needle]\nrequired = false\n",
      "mine.toml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name, "mine.toml");
  EXPECT_EQ(p->extends, "strict");
  EXPECT_EQ(p->target_context, 2048);
  EXPECT_EQ(p->fidelity[FidelityMetric::kKldMean], 0.01);
  EXPECT_EQ(p->fidelity[FidelityMetric::kTop1Agree], preset->fidelity[FidelityMetric::kTop1Agree]);
  EXPECT_FALSE(p->Required(ProbeFamily::kNeedle));
  // The family keys the file did not set stay the preset's.
  EXPECT_EQ(p->family(ProbeFamily::kNeedle)->cache_induced_rate_max,
            preset->family(ProbeFamily::kNeedle)->cache_induced_rate_max);
  EXPECT_EQ(p->FailsOnSignificant(ProbeFamily::kNeedle), preset->FailsOnSignificant(ProbeFamily::kNeedle));
}

TEST(DecidePolicy, FamilyNamesIgnoreCaseAndFailOnSignificantInherits) {
  const auto p = ParsePolicy(
      "[probes]\nfail_on_significant = true\n[probes.EXACT]\ncache_induced_rate_max = 0.1\n"
      "[probes.constraint]\nfail_on_significant = false\n",
      "p.toml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->CriteriaOf(ProbeFamily::kExact), 2);       // its rate + the inherited significance
  EXPECT_EQ(p->CriteriaOf(ProbeFamily::kNeedle), 1);      // no table: [probes]'s significance
  EXPECT_EQ(p->CriteriaOf(ProbeFamily::kConstraint), 0);  // switched off for this family
  EXPECT_EQ(p->CriteriaOf(ProbeFamily::kVariance), 0);    // no pooled test for variance
}

TEST(DecidePolicy, RangesSetTheThresholdsOfTheBucketsTheyCover) {
  const auto p = ParsePolicy(
      "[fidelity]\nkld_mean_max = 0.01\ntop1_agree_min = 0.9\n"
      "[[fidelity.range]]\nfrom = 1025\nto = 4096\nkld_mean_max = 0.02\n"
      "[[fidelity.range]]\nfrom = 1\nto = 64\nkld_mean_max = 0.001\ntop1_agree_min = 0.99\n",
      "p.toml");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->ranges.size(), 2u);
  EXPECT_EQ(p->ranges[0].from, 1);  // sorted
  // Inside a range: its thresholds, the others from [fidelity].
  EXPECT_EQ(p->LimitsFor(17, 32)[FidelityMetric::kKldMean], 0.001);
  EXPECT_EQ(p->LimitsFor(2049, 4096)[FidelityMetric::kKldMean], 0.02);
  EXPECT_EQ(p->LimitsFor(2049, 4096)[FidelityMetric::kTop1Agree], 0.9);
  // Outside every range: [fidelity]'s.
  EXPECT_EQ(p->LimitsFor(129, 256)[FidelityMetric::kKldMean], 0.01);
  EXPECT_FALSE(p->LimitsFor(129, 256)[FidelityMetric::kPplRatio].has_value());
  // Straddling a range's edge: the strictest of what applies to any part of the bucket.
  EXPECT_EQ(p->LimitsFor(33, 128)[FidelityMetric::kKldMean], 0.001);
  EXPECT_EQ(p->LimitsFor(33, 128)[FidelityMetric::kTop1Agree], 0.99);
  EXPECT_EQ(p->LimitsFor(513, 2048)[FidelityMetric::kKldMean], 0.01);
}

TEST(DecidePolicy, LoadPolicyTakesAPresetOrAFile) {
  const auto typo = LoadPolicy("strcit");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean strict?"), std::string::npos) << typo.error().message;
  const std::filesystem::path dir = testing::MakeTempDir("policy-file");
  const std::string path = (dir / "p.toml").string();
  std::ofstream(path) << "extends = \"balanced\"\n[fidelity]\nkld_mean_mx = 0.1\n";
  const auto bad = LoadPolicy(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(path + ":3:1"), std::string::npos) << bad.error().message;
  std::ofstream(path) << "extends = \"balanced\"\n";
  const auto good = LoadPolicy(path);
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->name, path);
}

}  // namespace
}  // namespace kvaudit
