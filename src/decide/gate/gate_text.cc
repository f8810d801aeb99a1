#include "decide/gate/gate_text.h"

#include <algorithm>
#include <cstdio>

namespace kvaudit {
namespace {

using nlohmann::json;

// The terminal shows the first failures of each configuration; --json and --junit have them all.
constexpr size_t kTextFailuresShown = 5;

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

json CaseJson(const GateCase& c) {
  const bool fidelity = c.family.empty();
  return {{"criterion", c.criterion},
          {"scope", c.scope},
          {"from", fidelity ? json(c.from) : json(nullptr)},
          {"to", fidelity ? json(c.to) : json(nullptr)},
          {"family", fidelity ? json(nullptr) : json(c.family)},
          {"measure", c.measure},
          {"measured", c.measured},
          {"interval", c.interval ? json::array({c.interval->lo, c.interval->hi}) : json(nullptr)},
          {"threshold", c.threshold},
          {"outcome", OutcomeWord(c.outcome)},
          {"pass", c.pass},
          {"text", c.text}};
}

}  // namespace

std::string GateVerdictText(const GateReport& r) {
  size_t width = std::string("configuration").size();
  for (const ConfigVerdict& v : r.configs) width = std::max(width, v.config.size());
  std::string out = "kvaudit gate: policy " + r.policy + ", target context: " + r.TargetText() +
                    (r.reference.empty() ? "" : ", relative to " + r.reference) + "\nresults:";
  for (const std::string& in : r.inputs) out += " " + in;
  out += "\n\n" + Pad("configuration", width) + "  verdict       " + Pad("safe up to", 24) + "  first failure\n";
  size_t cases = 0, failing = 0;
  size_t skipped = 0, inconclusive = 0;
  std::string failures, not_judged, no_signal, lost;
  for (const ConfigVerdict& v : r.configs) {
    const std::string first = v.first_failure ? v.cases[*v.first_failure].text : "-";
    out += Pad(v.config, width) + "  " + Pad(OutcomeWord(v.outcome), 12) + "  " + Pad(SafeUpToText(v), 24) + "  " +
           first + "\n";
    size_t shown = 0, failing_here = 0;
    for (const GateCase& c : v.cases) {
      ++cases;
      skipped += c.outcome == CaseOutcome::kNoSignal;
      inconclusive += c.outcome == CaseOutcome::kInconclusive;
      if (c.outcome != CaseOutcome::kFail && c.outcome != CaseOutcome::kInconclusive) continue;
      ++failing_here, failing += c.outcome == CaseOutcome::kFail;
      if (shown++ < kTextFailuresShown) failures += "  " + Pad(v.config, width) + "  " + c.text + "\n";
    }
    if (failing_here > kTextFailuresShown) {
      failures += "  " + Pad(v.config, width) + "  ... and " + std::to_string(failing_here - kTextFailuresShown) +
                  " more (--json or --junit lists every case)\n";
    }
    std::string joined;
    for (const std::string& n : v.not_judged) joined += (joined.empty() ? "" : "; ") + n;
    if (!joined.empty()) not_judged += "  " + Pad(v.config, width) + "  " + joined + "\n";
    joined.clear();
    for (const std::string& n : v.no_signal) joined += (joined.empty() ? "" : "; ") + n;
    if (!joined.empty()) no_signal += "  " + Pad(v.config, width) + "  " + joined + "\n";
    joined.clear();
    for (const std::string& n : v.lost_custom_probes) joined += (joined.empty() ? "" : "; ") + n;
    if (!joined.empty()) lost += "  " + Pad(v.config, width) + "  " + joined + "\n";
  }
  if (!failures.empty()) out += "\nfailing and inconclusive cases:\n" + failures;
  if (!not_judged.empty()) out += "\nnot judged:\n" + not_judged;
  if (!no_signal.empty())
    out += "\nno signal (the baseline fails these families; their cases are skipped):\n" + no_signal;
  if (!lost.empty()) out += "\n" + r.LostCustomProbesNote() + ":\n" + lost;
  if (const std::string note = r.InconclusiveNote(); !note.empty()) out += "\n" + note + ".\n";
  const int failed = r.failed();
  out += "\ngate: " + std::string(failed ? "FAIL" : "PASS") + ": " + std::to_string(failed) + " of " +
         std::to_string(r.configs.size()) + " configurations fail (" + std::to_string(cases) + " cases, " +
         std::to_string(failing) + " failing" +
         (inconclusive ? ", " + std::to_string(inconclusive) + " inconclusive" : "") +
         (skipped ? ", " + std::to_string(skipped) + " skipped" : "") + ")\n";
  return out;
}

json GateJson(const GateReport& r) {
  json j = {{"policy", r.policy},
            {"target_context", r.target_context ? json(*r.target_context) : json(nullptr)},
            {"inconclusive_counts_as", r.inconclusive_fails ? "fail" : "warn"},
            {"relative_to", r.reference.empty() ? json(nullptr) : json(r.reference)},
            {"pass", r.failed() == 0},
            {"failed", r.failed()},
            {"inconclusive", r.inconclusive()},
            {"inputs", r.inputs}};
  j["configs"] = json::array();
  for (const ConfigVerdict& v : r.configs) {
    json cases = json::array();
    for (const GateCase& c : v.cases) cases.push_back(CaseJson(c));
    j["configs"].push_back({{"config", v.config},
                            {"verdict", OutcomeWord(v.outcome)},
                            {"pass", v.pass},
                            {"safe_up_to", v.safe_up_to ? json(*v.safe_up_to) : json(nullptr)},
                            {"safe_up_to_is_all_measured", v.safe_up_to_is_all_measured},
                            {"fidelity_judged", v.judged_fidelity},
                            {"first_failure", v.first_failure ? CaseJson(v.cases[*v.first_failure]) : json(nullptr)},
                            {"not_judged", v.not_judged},
                            {"no_signal", v.no_signal},
                            {"lost_custom_probes", v.lost_custom_probes},
                            {"cases", std::move(cases)}});
  }
  return j;
}

}  // namespace kvaudit
