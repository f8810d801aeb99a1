// Multiple-comparison correction and pooling for probe attribution. A probe run tests
// many cells (family × variant × configuration × length [× depth]); at α = 0.05 per cell, one
// configuration's 60 cells would show three "significant" cells by chance alone. This file gives
// the Holm (1979) step-down correction over a family of tests and the pooled test of a whole
// probe family. Which tests form a family, and why: docs/probes.md "Multiple comparisons".
#pragma once

#include <span>
#include <vector>

#include "probe/attribution.h"

namespace kvaudit {

// Holm, S. (1979) "A simple sequentially rejective multiple test procedure", Scand. J. Statist.
// 6:65–70, as adjusted p-values: with the m p-values sorted ascending, p_(1) ≤ … ≤ p_(m),
//   adj_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)),
// returned in input order. H_i is rejected at level α exactly when adj_i < α (the same strict
// inequality as the uncorrected test). Ties are ordered by index, so the result is deterministic.
std::vector<double> HolmAdjust(std::span<const double> p);

// Holm over the tests in `family`, in place: sets mcnemar_p_holm and significant.
// A test with fewer than 2 discordant pairs has exact p = 1 whatever the split (McNemarExactP), so
// it can never be rejected; it keeps p_holm = 1 and is not counted in m. This is valid because the
// exact test is conditional on b + c: given every cell's b + c, the untestable cells are fixed and
// Holm over the rest controls the family-wise error rate (the argument of Tarone 1990, Biometrics
// 46:515–522, for tests whose smallest attainable p is 1). The exclusion looks at b + c only,
// never at the observed split.
void HolmCorrect(std::span<ProbeAttribution* const> family, double alpha = kProbeAlpha);

// The pooled test over cells: the 2×2 tables summed, and the exact McNemar (1947) test on the
// summed discordant counts b = Σ cache_induced, c = Σ recovered. Valid because every instance is
// one paired observation (baseline and configuration on the same prompt) and instances are
// independent, so the summed table is a McNemar table over all of them. It is also the exact
// stratified test: under H0 each discordant pair falls either way with probability 1/2 whatever
// its cell, so Σ b given Σ (b + c) is Binomial(Σ (b + c), 1/2) even when cells differ in pass
// rates. The result is a family of one (p_holm = p) until HolmCorrect is applied.
ProbeAttribution PoolAttributions(std::span<const ProbeAttribution> cells, double alpha = kProbeAlpha);

}  // namespace kvaudit
