#include "decide/gate/gate_markdown.h"

namespace kvaudit {
namespace {

// A pull-request comment stays readable (and under the forge's size limit): the first failures of
// each configuration, the count of the rest; --junit and --json have every case.
constexpr size_t kMarkdownFailuresShown = 10;

// A table cell: '|' would end it and a newline the row; backticks keep specs literal.
std::string Cell(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Code(const std::string& s) { return "`" + Cell(s) + "`"; }

}  // namespace

std::string GateMarkdown(const GateReport& r) {
  const int failed = r.failed();
  std::string out = std::string("## kvaudit gate: ") + (failed ? "FAIL" : "PASS") + "\n\n";
  out += "Policy " + Code(r.policy) + ", target context: " + r.TargetText() +
         (r.reference.empty() ? "" : ", relative to " + Code(r.reference)) + "; " + std::to_string(failed) + " of " +
         std::to_string(r.configs.size()) + " configurations fail.\n\n";
  if (const std::string note = r.InconclusiveNote(); !note.empty()) out += Cell(note) + ".\n\n";
  out += "| configuration | verdict | safe up to | first failure |\n|---|---|---|---|\n";
  for (const ConfigVerdict& v : r.configs) {
    const std::string first = v.first_failure ? Cell(v.cases[*v.first_failure].text) : "–";
    out += "| " + Code(v.config) + " | **" + OutcomeWord(v.outcome) + "** | " + Cell(SafeUpToText(v)) + " | " + first +
           " |\n";
  }
  std::string failing;
  for (const ConfigVerdict& v : r.configs) {
    size_t n = 0;
    for (const GateCase& c : v.cases) {
      if (c.outcome != CaseOutcome::kFail && c.outcome != CaseOutcome::kInconclusive) continue;
      if (n++ >= kMarkdownFailuresShown) continue;
      failing += "| " + Code(v.config) + " | " + OutcomeWord(c.outcome) + " | " + Code(c.criterion) + " | " +
                 Cell(c.scope) + " | " + GateNumber(c.measured) + IntervalText(c) + " | " + GateNumber(c.threshold) +
                 " | " + Cell(c.detail) + " |\n";
    }
    if (n > kMarkdownFailuresShown) {
      failing += "| " + Code(v.config) + " | … | | | | | and " + std::to_string(n - kMarkdownFailuresShown) +
                 " more failing or inconclusive cases |\n";
    }
  }
  if (!failing.empty()) {
    out +=
        "\n### Failing and inconclusive cases\n\n| configuration | outcome | criterion | where | measured [95% "
        "interval] | threshold | detail |\n|---|---|---|---|---|---|---|\n" +
        failing;
  }
  std::string not_judged;
  for (const ConfigVerdict& v : r.configs) {
    for (const std::string& n : v.not_judged) not_judged += "- " + Code(v.config) + ": " + Cell(n) + "\n";
  }
  if (!not_judged.empty()) out += "\n### Not judged\n\n" + not_judged;
  std::string no_signal;
  for (const ConfigVerdict& v : r.configs) {
    for (const std::string& n : v.no_signal) no_signal += "- " + Code(v.config) + ": " + Cell(n) + "\n";
  }
  if (!no_signal.empty()) {
    out +=
        "\n### No signal\n\nThe baseline fails these probe families, so they say nothing about the cache; "
        "their criteria are skipped, not passed.\n\n" +
        no_signal;
  }
  std::string lost;
  for (const ConfigVerdict& v : r.configs) {
    for (const std::string& n : v.lost_custom_probes) lost += "- " + Code(v.config) + ": " + Cell(n) + "\n";
  }
  if (!lost.empty()) out += "\n### Custom probes lost\n\n" + Cell(r.LostCustomProbesNote()) + ".\n\n" + lost;
  out += "\nResults: ";
  for (size_t i = 0; i < r.inputs.size(); ++i) out += (i ? ", " : "") + Code(r.inputs[i]);
  return out + "\n";
}

}  // namespace kvaudit
