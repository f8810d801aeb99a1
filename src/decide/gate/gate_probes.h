// The gate's probe cases (docs/decision.md "Acceptance policy"): each family the policy judges,
// its no-signal floor, rates by their exact intervals, significance, variance, drift, the team's
// own probes one by one, and under relative_to each checked family's rate against the reference's.
#pragma once

#include "decide/gate/gate_cases.h"

namespace kvaudit::gate_cases {

// The families the policy judges, in canonical order; a required one that is missing is bad input.
// `ref`: relative_to's configuration, else null.
Status ProbeCases(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref, ConfigVerdict* v);

}  // namespace kvaudit::gate_cases
