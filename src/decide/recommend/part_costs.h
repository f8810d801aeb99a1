// The costs the search sums (docs/decision.md "Recommend"): for every candidate
// format and every cache part (a layer's K or V), the fidelity cost of storing that part alone in
// that format, read from a sensitivity run. Measured where the run measured the part end to end
// (its one-at-a-time mean KLD); estimated for the other parts of `--stage auto`/`proxy` from the
// proxy score and the K-only / V-only end-to-end KLDs, which the measured parts are part of.
#pragma once

#include <vector>

#include "decide/sensitivity/sensitivity.h"

namespace kvaudit {

struct PartCost {
  double kld = 0;         // nats: mean KLD against the baseline with only this part so stored
  bool measured = false;  // end to end (one at a time); false: estimated
};

// [n_candidates][n_parts] in the run's candidate order and AllParts order.
//
// The estimate, per candidate and tensor (K, V apart): the K-only configuration's end-to-end mean
// KLD is, by additivity (measured on the bundled model: Σ one at a time / all 0.99–1.04), the sum
// of its K parts' costs; what the measured K parts do not account for, R = KLD(K only) −
// Σ measured, is shared among the unmeasured K parts in proportion to their proxy scores. When
// R ≤ 0 (noise, or the measured parts are all of it), each unmeasured part gets the smallest
// measured cost of that tensor scaled by its proxy score against that part's (the proxy orders
// them; a part ranked below every measured one costs less than the least of them). With no part
// of a tensor measured at all (`--stage proxy`), R is the whole K-only (V-only) KLD.
std::vector<std::vector<PartCost>> PartCosts(const SensitivityResult& result);

}  // namespace kvaudit
