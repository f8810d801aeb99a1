// The gate's fidelity cases (docs/decision.md "Acceptance policy"): eval's buckets, small ones
// pooled, each statistic judged against the policy's thresholds and, under relative_to, against
// the reference's interval; the safe prefix.
#pragma once

#include "decide/gate/gate_cases.h"

namespace kvaudit::gate_cases {

// One case per (bucket with from <= target, criterion) and the safe prefix over every bucket;
// with relative_to, the cases against the reference (`ref`, else null) in each bucket as well.
Status FidelityCases(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref, ConfigVerdict* v);

}  // namespace kvaudit::gate_cases
