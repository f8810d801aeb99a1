// The gate's cases, shared by its parts (gate.cc, gate_fidelity.cc, gate_probes.cc): one
// configuration's inputs, and how a case is built, judged against its threshold by its interval
// (docs/decision.md "Three outcomes") and written in one line.
#pragma once

#include <cstdint>
#include <string>

#include "decide/gate/gate.h"

namespace kvaudit::gate_cases {

// The results of one configuration, wherever they came from.
struct ConfigInputs {
  std::string spec;
  const EvalConfigResult* eval = nullptr;
  const EvalInput* eval_file = nullptr;
  const ProbeConfigResult* probe = nullptr;
  const ProbeInput* probe_file = nullptr;
};

// A case before it is judged: pass and text follow from measured and threshold.
GateCase Case(std::string criterion, std::string scope, int from, int to, std::string family, std::string measure,
              double measured, double threshold);
std::string Range(int from, int to);  // "65-128"
// PASS: the interval wholly on the passing side of the threshold; FAIL: wholly beyond; else INCONCLUSIVE.
CaseOutcome Against(Interval ci, double threshold, bool is_min);
// c.outcome and c.pass from its interval (its measured value where it has none) and the policy.
void Settle(GateCase& c, bool is_min, const AcceptancePolicy& policy);
// c.detail, and c.text: "top1_agree 0.972656 [0.9447, 0.9867] straddles 0.975 (top1_agree_min),
// context 65-128: 256 tokens in 4 windows".
void Describe(GateCase& c, bool is_min, std::string detail);
// "; about N more windows would likely decide it" for an INCONCLUSIVE fidelity case; "" otherwise.
std::string MoreWindowsText(const GateCase& c, int windows);
// The same against a reference measured on the same windows, whose interval narrows too.
std::string RelativeMoreWindowsText(const GateCase& c, const Interval& ref, double ref_value, bool is_min, int windows);
// A probe rate (k of n) against its maximum, by its exact interval (a maximum of 0: on the sample).
void JudgeRate(GateCase& c, int64_t k, int64_t n, const AcceptancePolicy& policy, const std::string& counts);

}  // namespace kvaudit::gate_cases
