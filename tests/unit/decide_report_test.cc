// The gate's outputs (decide/gate/junit.h, decide/gate/gate_markdown.h, decide/gate/gate_text.h): the JUnit XML
// parses back (tinyxml2) with counts that match the cases and one <failure> per violated
// criterion giving measured value, threshold and bucket; escaping; the markdown table; --json.
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <string>

#include "decide/gate/gate.h"
#include "decide/gate/gate_markdown.h"
#include "decide/gate/gate_text.h"
#include "decide/gate/junit.h"

namespace kvaudit {
namespace {

GateCase Fidelity(const std::string& key, const std::string& measure, int from, int to, double measured,
                  double threshold, bool pass) {
  GateCase c;
  c.criterion = key, c.scope = "context " + std::to_string(from) + "-" + std::to_string(to), c.from = from, c.to = to;
  c.measure = measure, c.measured = measured, c.threshold = threshold, c.pass = pass;
  c.outcome = pass ? CaseOutcome::kPass : CaseOutcome::kFail;
  c.detail = "256 tokens";
  c.text = measure + " " + GateNumber(measured) + (pass ? " <= " : " > ") + GateNumber(threshold) + " (" + key + "), " +
           c.scope + ": " + c.detail;
  return c;
}

// Two configurations: one passing every case but a skipped one (exact: no signal), one failing two
// fidelity cases and one probe case.
GateReport Report() {
  GateReport r;
  r.policy = "p<&>\"'.toml";
  r.inputs = {"eval/results.json (eval)", "probe/results.json (probe)"};
  ConfigVerdict good;
  good.config = "k=q8_0,v=q8_0", good.pass = true, good.judged_fidelity = true, good.outcome = CaseOutcome::kPass;
  good.safe_up_to = 4095, good.safe_up_to_is_all_measured = true;
  good.cases = {Fidelity("kld_mean_max", "kld_mean", 1, 16, 0.0002, 0.005, true),
                Fidelity("kld_mean_max", "kld_mean", 17, 32, 0.0003, 0.005, true)};
  GateCase exact;
  exact.criterion = "exact.fail_on_significant", exact.scope = "family exact", exact.family = "exact";
  exact.measure = "baseline pass rate", exact.measured = 0, exact.threshold = 0.5, exact.pass = true;
  exact.outcome = CaseOutcome::kNoSignal, exact.text = "no signal: the baseline passes 0 of 12 exact instances";
  good.cases.push_back(exact);
  good.no_signal = {"exact: the baseline passes 0 of 12"};
  ConfigVerdict bad;
  bad.config = "k=q4_0,v=q4_0", bad.pass = false, bad.judged_fidelity = true, bad.outcome = CaseOutcome::kFail;
  bad.cases = {Fidelity("kld_mean_max", "kld_mean", 1, 16, 0.05, 0.005, false),
               Fidelity("kld_mean_max", "kld_mean", 17, 32, 0.004, 0.005, true),
               Fidelity("ppl_ratio_max", "ppl_ratio", 17, 32, 1.02, 1.005, false)};
  GateCase needle;
  needle.criterion = "needle.cache_induced_rate_max", needle.scope = "family needle", needle.family = "needle";
  needle.measure = "cache-induced rate", needle.measured = 0.25, needle.threshold = 0.1, needle.pass = false;
  needle.outcome = CaseOutcome::kFail;
  needle.detail = "5 of 20 <lost> & \x01";
  needle.text = "cache-induced rate 0.25 > 0.1 (needle.cache_induced_rate_max), family needle: " + needle.detail;
  bad.cases.push_back(needle);
  bad.first_failure = 0;
  bad.not_judged = {"variance: no probe results (not required)"};
  r.configs = {good, bad};
  return r;
}

int IntAttr(const tinyxml2::XMLElement* e, const char* name) {
  int v = -1;
  EXPECT_EQ(e->QueryIntAttribute(name, &v), tinyxml2::XML_SUCCESS) << name;
  return v;
}

TEST(DecideReport, JunitParsesBackWithMatchingCounts) {
  const GateReport r = Report();
  const std::string xml = GateJunitXml(r);
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(xml.c_str(), xml.size()), tinyxml2::XML_SUCCESS) << doc.ErrorStr() << "\n" << xml;
  const tinyxml2::XMLElement* root = doc.FirstChildElement("testsuites");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(IntAttr(root, "tests"), 7);
  EXPECT_EQ(IntAttr(root, "failures"), 3);
  EXPECT_STREQ(root->Attribute("name"), "kvaudit gate, policy p<&>\"'.toml");  // escaped and read back
  int suites = 0, failures_seen = 0;
  for (const auto* suite = root->FirstChildElement("testsuite"); suite;
       suite = suite->NextSiblingElement("testsuite")) {
    const ConfigVerdict& v = r.configs[static_cast<size_t>(suites++)];
    EXPECT_STREQ(suite->Attribute("name"), v.config.c_str());
    int cases = 0, failures = 0, skipped = 0;
    for (const auto* tc = suite->FirstChildElement("testcase"); tc; tc = tc->NextSiblingElement("testcase")) {
      const GateCase& c = v.cases[static_cast<size_t>(cases++)];
      EXPECT_EQ(std::string(tc->Attribute("name")), c.criterion + " " + c.scope);
      const auto* failure = tc->FirstChildElement("failure");
      ASSERT_EQ(failure != nullptr, !c.pass) << c.criterion;
      // No signal is a skipped case carrying its reason, never a plain (green) one.
      const auto* skip = tc->FirstChildElement("skipped");
      ASSERT_EQ(skip != nullptr, c.outcome == CaseOutcome::kNoSignal) << c.criterion;
      if (skip) {
        EXPECT_EQ(std::string(skip->Attribute("message")), c.text);
        ++skipped;
      }
      if (!failure) continue;
      ++failures;
      const std::string message = failure->Attribute("message");
      EXPECT_NE(message.find(GateNumber(c.measured)), std::string::npos) << message;
      EXPECT_NE(message.find(GateNumber(c.threshold)), std::string::npos) << message;
      EXPECT_NE(message.find(c.scope), std::string::npos) << message;
    }
    EXPECT_EQ(IntAttr(suite, "tests"), cases);
    EXPECT_EQ(IntAttr(suite, "failures"), failures);
    EXPECT_EQ(IntAttr(suite, "skipped"), skipped);
    EXPECT_EQ(static_cast<size_t>(cases), v.cases.size());
    failures_seen += failures;
  }
  EXPECT_EQ(suites, 2);
  EXPECT_EQ(failures_seen, 3);
  // A control character cannot appear in XML 1.0; it became U+FFFD.
  EXPECT_NE(xml.find("&lt;lost&gt; &amp; \xEF\xBF\xBD"), std::string::npos);
}

TEST(DecideReport, XmlEscapeKeepsTextAndReplacesWhatXmlCannotHold) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(XmlEscape("tab\there\nnew"), "tab\there\nnew");
  EXPECT_EQ(XmlEscape("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(XmlEscape(std::string("x\0y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(XmlEscape("bad \xFF byte"), "bad \xEF\xBF\xBD byte");
}

TEST(DecideReport, MarkdownLeadsWithTheVerdictTable) {
  const std::string md = GateMarkdown(Report());
  EXPECT_EQ(md.rfind("## kvaudit gate: FAIL\n", 0), 0u) << md;
  const size_t table = md.find("| configuration | verdict | safe up to | first failure |");
  const size_t failing = md.find("### Failing and inconclusive cases");
  ASSERT_NE(table, std::string::npos) << md;
  ASSERT_NE(failing, std::string::npos) << md;
  EXPECT_LT(table, failing);
  EXPECT_NE(md.find("| `k=q8_0,v=q8_0` | **PASS** | all measured (>= 4095) | – |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `k=q4_0,v=q4_0` | **FAIL** | none | kld_mean 0.05 > 0.005"), std::string::npos) << md;
  // One row per failing case, after the table.
  size_t rows = 0;
  for (size_t at = md.find("| `k=q4_0,v=q4_0` | FAIL | `", failing); at != std::string::npos;
       at = md.find("| `k=q4_0,v=q4_0` | FAIL | `", at + 1))
    ++rows;
  EXPECT_EQ(rows, 3u);
  // The detail column holds what the other columns do not: the bucket's tokens, not the text again.
  EXPECT_NE(md.find("| `k=q4_0,v=q4_0` | FAIL | `kld_mean_max` | context 1-16 | 0.05 | 0.005 | 256 tokens |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Not judged"), std::string::npos);
  EXPECT_NE(md.find("### No signal"), std::string::npos) << md;
  EXPECT_NE(md.find("- `k=q8_0,v=q8_0`: exact: the baseline passes 0 of 12"), std::string::npos) << md;
}

TEST(DecideReport, TerminalBlockAndJsonCarryTheVerdicts) {
  const GateReport r = Report();
  const std::string text = GateVerdictText(r);
  EXPECT_NE(text.find("k=q4_0,v=q4_0  FAIL          none"), std::string::npos) << text;
  EXPECT_NE(text.find("failing and inconclusive cases:"), std::string::npos) << text;
  EXPECT_NE(text.find("gate: FAIL: 1 of 2 configurations fail (7 cases, 3 failing, 1 skipped)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("no signal (the baseline fails these families; their cases are skipped):\n  k=q8_0,v=q8_0  "
                      "exact: the baseline passes 0 of 12\n"),
            std::string::npos)
      << text;
  const nlohmann::json j = GateJson(r);
  EXPECT_EQ(j["pass"], false);
  EXPECT_EQ(j["failed"], 1);
  ASSERT_EQ(j["configs"].size(), 2u);
  EXPECT_EQ(j["configs"][0]["verdict"], "PASS");
  EXPECT_EQ(j["configs"][0]["safe_up_to"], 4095);
  EXPECT_EQ(j["configs"][0]["cases"][2]["outcome"], "NO SIGNAL");
  EXPECT_EQ(j["configs"][0]["cases"][1]["outcome"], "PASS");
  EXPECT_EQ(j["configs"][0]["no_signal"], nlohmann::json::array({"exact: the baseline passes 0 of 12"}));
  EXPECT_EQ(j["configs"][1]["safe_up_to"], nullptr);
  EXPECT_EQ(j["configs"][1]["first_failure"]["criterion"], "kld_mean_max");
  EXPECT_EQ(j["configs"][1]["cases"].size(), 4u);
  EXPECT_EQ(j["configs"][1]["cases"][3]["family"], "needle");
  EXPECT_EQ(j["configs"][1]["cases"][3]["from"], nullptr);
}

// An INCONCLUSIVE case is a JUnit failure of type "inconclusive" where the policy fails it, a
// skipped case where it passes with a warning; both carry the numbers, and every output says it.
TEST(DecideReport, InconclusiveIsAFailureOrASkippedCasePerThePolicy) {
  GateReport r;
  r.policy = "strict";
  ConfigVerdict v;
  v.config = "k=q8_0,v=q8_0", v.judged_fidelity = true, v.outcome = CaseOutcome::kInconclusive, v.pass = false;
  GateCase c = Fidelity("top1_agree_min", "top1_agree", 65, 128, 0.972656, 0.975, false);
  c.outcome = CaseOutcome::kInconclusive, c.interval = Interval{0.9447, 0.9867};
  c.text = "top1_agree 0.972656 [0.9447, 0.9867] straddles 0.975 (top1_agree_min), context 65-128: 256 tokens";
  v.cases = {c};
  v.first_failure = 0;
  r.configs = {v};
  std::string xml = GateJunitXml(r);
  EXPECT_NE(xml.find("<failure message=\"inconclusive: top1_agree 0.972656 [0.9447, 0.9867] straddles 0.975"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("type=\"inconclusive\""), std::string::npos) << xml;
  std::string text = GateVerdictText(r);
  EXPECT_NE(text.find("k=q8_0,v=q8_0  INCONCLUSIVE"), std::string::npos) << text;
  EXPECT_NE(text.find("1 configuration is INCONCLUSIVE"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 cases, 0 failing, 1 inconclusive)"), std::string::npos) << text;
  const std::string md = GateMarkdown(r);
  EXPECT_NE(md.find("| `k=q8_0,v=q8_0` | **INCONCLUSIVE** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| INCONCLUSIVE | `top1_agree_min` | context 65-128 | 0.972656 [0.9447, 0.9867] | 0.975 |"),
            std::string::npos)
      << md;
  EXPECT_EQ(GateJson(r)["configs"][0]["verdict"], "INCONCLUSIVE");
  EXPECT_EQ(GateJson(r)["configs"][0]["cases"][0]["interval"], nlohmann::json::array({0.9447, 0.9867}));

  r.inconclusive_fails = false;
  r.configs[0].pass = r.configs[0].cases[0].pass = true;
  xml = GateJunitXml(r);
  EXPECT_EQ(xml.find("<failure"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"inconclusive: top1_agree 0.972656"), std::string::npos) << xml;
  text = GateVerdictText(r);
  EXPECT_NE(text.find("passes it with this warning"), std::string::npos) << text;
  EXPECT_NE(text.find("gate: PASS: 0 of 1 configurations fail"), std::string::npos) << text;
}

}  // namespace
}  // namespace kvaudit
