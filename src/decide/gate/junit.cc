#include "decide/gate/junit.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace kvaudit {

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const int32_t cp = NextCodepoint(s, &pos);
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Invalid UTF-8 and the controls XML 1.0 cannot hold (not even as &#x1;) become U+FFFD.
        const bool bad = cp < 0 || (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') ||
                         (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF || cp > 0x10FFFF;
        AppendUtf8(bad ? 0xFFFD : static_cast<uint32_t>(cp), &out);
    }
  }
  return out;
}

namespace {

std::string Attr(const char* name, std::string_view value) {
  return std::string(" ") + name + "=\"" + XmlEscape(value) + "\"";
}

int Failures(const ConfigVerdict& v) {
  return static_cast<int>(std::count_if(v.cases.begin(), v.cases.end(), [](const GateCase& c) { return !c.pass; }));
}

// No signal, a warning, and INCONCLUSIVE where the policy passes it with a warning: neither a pass
// nor a failure.
bool IsSkipped(const GateCase& c) { return c.outcome != CaseOutcome::kPass && c.pass; }

int Skipped(const ConfigVerdict& v) {
  return static_cast<int>(std::count_if(v.cases.begin(), v.cases.end(), IsSkipped));
}

// A configuration whose cases are all skipped (no criterion applied) still gets its suite, so CI
// shows it was there.
std::string Suite(const ConfigVerdict& v) {
  std::string out = "  <testsuite" + Attr("name", v.config) + Attr("tests", std::to_string(v.cases.size())) +
                    Attr("failures", std::to_string(Failures(v))) + Attr("errors", "0") +
                    Attr("skipped", std::to_string(Skipped(v))) + ">\n";
  out += "    <properties>\n      <property" + Attr("name", "safe_up_to") + Attr("value", SafeUpToText(v)) + "/>\n";
  for (const std::string& n : v.not_judged)
    out += "      <property" + Attr("name", "not_judged") + Attr("value", n) + "/>\n";
  for (const std::string& n : v.no_signal)
    out += "      <property" + Attr("name", "no_signal") + Attr("value", n) + "/>\n";
  for (const std::string& n : v.lost_custom_probes)
    out += "      <property" + Attr("name", "lost_custom_probe") + Attr("value", n) + "/>\n";
  out += "    </properties>\n";
  for (const GateCase& c : v.cases) {
    out += "    <testcase" + Attr("classname", "kvaudit.gate." + v.config) + Attr("name", c.criterion + " " + c.scope);
    const bool inconclusive = c.outcome == CaseOutcome::kInconclusive;
    const std::string message = (inconclusive                      ? "inconclusive: "
                                 : c.outcome == CaseOutcome::kWarn ? "warning: "
                                                                   : "") +
                                c.text;
    if (IsSkipped(c)) {
      out += ">\n      <skipped" + Attr("message", message) + "/>\n    </testcase>\n";
      continue;
    }
    if (c.pass) {
      out += "/>\n";
      continue;
    }
    out += ">\n      <failure" + Attr("message", message) + Attr("type", inconclusive ? "inconclusive" : "threshold") +
           ">" + XmlEscape(message) + "</failure>\n    </testcase>\n";
  }
  return out + "  </testsuite>\n";
}

}  // namespace

std::string GateJunitXml(const GateReport& report) {
  size_t tests = 0;
  int failures = 0;
  for (const ConfigVerdict& v : report.configs) tests += v.cases.size(), failures += Failures(v);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites" + Attr("name", "kvaudit gate, policy " + report.policy) + Attr("tests", std::to_string(tests)) +
         Attr("failures", std::to_string(failures)) + Attr("errors", "0") + ">\n";
  for (const ConfigVerdict& v : report.configs) out += Suite(v);
  return out + "</testsuites>\n";
}

}  // namespace kvaudit
