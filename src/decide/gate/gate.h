// `kvaudit gate` (docs/decision.md "Gate"): every configuration of the results judged by
// an acceptance policy, one case per (configuration, criterion, context bucket or probe family),
// and a verdict per configuration: PASS or FAIL, the context it is safe up to under the policy's
// fidelity criteria, and the first criterion it failed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/gate/gate_inputs.h"
#include "decide/acceptance/policy.h"

namespace kvaudit {

struct GateCase {
  std::string criterion;  // the policy key: "kld_mean_max", "needle.cache_induced_rate_max"
  std::string scope;      // "context 1-16" or "family needle"
  int from = 0, to = 0;   // the context bucket of a fidelity case; 0 for probe cases
  std::string family;     // the probe family of a probe case; "" for fidelity cases
  std::string measure;    // what was measured: "kld_mean", "cache-induced rate", "Holm-adjusted p"
  double measured = 0, threshold = 0;
  bool pass = false;
  // No signal: the baseline fails the family too often for the cache to be judged on it. The case
  // neither passes nor fails (pass stays true so the verdict ignores it; JUnit marks it skipped).
  bool skipped = false;
  std::string text;    // the case in one line: measured value, threshold, where, what it is made of
  std::string detail;  // the part of text the other fields do not hold: "1234 tokens", the counts
};

struct ConfigVerdict {
  std::string config;  // canonical spec
  bool pass = false;
  bool judged_fidelity = false;   // the policy has fidelity criteria (so safe_up_to means something)
  std::optional<int> safe_up_to;  // the longest context whose buckets, from the first, all pass
  bool safe_up_to_is_all_measured = false;
  std::vector<GateCase> cases;          // fidelity by bucket then criterion, then probe families
  std::optional<size_t> first_failure;  // index in cases
  std::vector<std::string> not_judged;  // criteria of non-required families the results do not have
  std::vector<std::string> no_signal;   // families the baseline fails too often: "exact: the baseline passes 0 of 12"
};

struct GateReport {
  std::string policy;                  // its name or path
  std::optional<int> target_context;   // the policy's; nullopt: the longest context measured
  std::vector<std::string> inputs;     // the results.json files read, "path (eval|probe)"
  std::vector<ConfigVerdict> configs;  // in the order the results list them
  int failed() const;
  int exit_code() const { return failed() > 0 ? 1 : 0; }
  std::string TargetText() const;  // "4096 tokens", or "the longest context measured"
};

// Judges every configuration of `inputs` by `policy`. BadInput when the results lack what the
// policy asks about (naming it and the eval/probe flag that produces it) or contradict each other.
Expected<GateReport> EvaluateGate(const AcceptancePolicy& policy, const GateInputs& inputs);

// "2048", "all measured (>= 4095)", "none", "not judged": eval's words for a safe range.
std::string SafeUpToText(const ConfigVerdict& v);
// Numbers as the gate prints them everywhere (terminal, markdown, JUnit): %.6g.
std::string GateNumber(double x);

}  // namespace kvaudit
