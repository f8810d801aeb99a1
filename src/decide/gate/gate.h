// `kvaudit gate` (docs/decision.md "Gate"): every configuration of the results judged by
// an acceptance policy, one case per (configuration, criterion, context bucket or probe family),
// each judged by its 95% interval against the threshold (docs/decision.md "Three outcomes"), and a
// verdict per configuration: PASS, FAIL or INCONCLUSIVE, the context it is safe up to under the
// policy's fidelity criteria, and the first case that kept it from PASS.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/gate/gate_inputs.h"
#include "decide/acceptance/policy.h"

namespace kvaudit {

// PASS: the interval is wholly on the passing side of the threshold; FAIL: wholly beyond it;
// INCONCLUSIVE: it straddles it; NO SIGNAL: the baseline fails the family; WARN: a rule the policy
// only warns about is broken (a custom probe lost under probes.custom.per_probe = "warn").
enum class CaseOutcome { kPass, kFail, kInconclusive, kNoSignal, kWarn };
const char* OutcomeWord(CaseOutcome o);  // "PASS", "FAIL", "INCONCLUSIVE", "NO SIGNAL", "WARN"

struct GateCase {
  std::string criterion;  // the policy key: "kld_mean_max", "needle.cache_induced_rate_max"
  std::string scope;      // "context 1-16" or "family needle"
  int from = 0, to = 0;   // the context bucket of a fidelity case; 0 for probe cases
  std::string family;     // the probe family of a probe case; "" for fidelity cases
  std::string measure;    // what was measured: "kld_mean", "cache-induced rate", "Holm-adjusted p"
  double measured = 0, threshold = 0;
  std::optional<Interval> interval;  // the measured value's 95% interval; nullopt: judged as measured
  CaseOutcome outcome = CaseOutcome::kFail;
  // Whether the case lets its configuration pass under the policy: PASS and NO SIGNAL do,
  // INCONCLUSIVE does where the policy's inconclusive is "warn".
  bool pass = false;
  std::string text;    // the case in one line: measured value, threshold, where, what it is made of
  std::string detail;  // the part of text the other fields do not hold: "1234 tokens", the counts
};

struct ConfigVerdict {
  std::string config;  // canonical spec
  // FAIL when a case fails, else INCONCLUSIVE when one is, else PASS.
  CaseOutcome outcome = CaseOutcome::kFail;
  bool pass = false;              // accepted under the policy: PASS, or INCONCLUSIVE under inconclusive = "warn"
  bool judged_fidelity = false;   // the policy has fidelity criteria (so safe_up_to means something)
  std::optional<int> safe_up_to;  // the longest context whose buckets, from the first, all pass
  bool safe_up_to_is_all_measured = false;
  std::vector<GateCase> cases;          // fidelity by bucket then criterion, then probe families
  std::optional<size_t> first_failure;  // index in cases: the first FAIL, else the first INCONCLUSIVE
  std::vector<std::string> not_judged;  // criteria of non-required families the results do not have
  std::vector<std::string> no_signal;   // families the baseline fails too often: "exact: the baseline passes 0 of 12"
  // Custom probes that pass at baseline and fail under the configuration, named whatever the
  // policy does with them: "json-schema-3 (1053 tokens)".
  std::vector<std::string> lost_custom_probes;
};

struct GateReport {
  std::string policy;                  // its name or path
  std::optional<int> target_context;   // the policy's; nullopt: the longest context measured
  bool inconclusive_fails = true;      // the policy's inconclusive: "fail" (true) or "warn"
  std::string reference;               // relative_to's configuration as the results name it; "" without
  std::vector<std::string> inputs;     // the results.json files read, "path (eval|probe)"
  std::vector<ConfigVerdict> configs;  // in the order the results list them
  int failed() const;
  int exit_code() const { return failed() > 0 ? 1 : 0; }
  std::string TargetText() const;  // "4096 tokens", or "the longest context measured"
  int inconclusive() const;        // configurations whose verdict is INCONCLUSIVE
  // "" when none is; else what INCONCLUSIVE means and where this policy puts it, in one sentence.
  std::string InconclusiveNote() const;
  bool lost_custom_probe_fails = false;  // the policy's probes.custom.per_probe is "fail"
  // "custom probes lost under a configuration (they pass at baseline; policy P fails it | warns)".
  std::string LostCustomProbesNote() const;
};

// Judges every configuration of `inputs` by `policy`. BadInput when the results lack what the
// policy asks about (naming it and the eval/probe flag that produces it) or contradict each other.
Expected<GateReport> EvaluateGate(const AcceptancePolicy& policy, const GateInputs& inputs);

// "2048", "all measured (>= 4095)", "none", "not judged": eval's words for a safe range.
std::string SafeUpToText(const ConfigVerdict& v);
// Numbers as the gate prints them everywhere (terminal, markdown, JUnit): %.6g.
std::string GateNumber(double x);
// " [lo, hi]" of a case judged by its interval, "" for one judged as measured.
std::string IntervalText(const GateCase& c);

}  // namespace kvaudit
