// Exact McNemar test for paired pass/fail outcomes (probe attribution). Only the
// discordant pairs carry information about a difference between baseline and configuration:
// under H0 each discordant pair is equally likely to go either way, so with b pairs
// "baseline pass, configuration fail" and c pairs "baseline fail, configuration pass",
// min(b, c) is the lower tail of Binomial(b + c, 1/2). Definitions: docs/probes.md.
#pragma once

#include <cstdint>

namespace kvaudit {

// Two-sided exact p-value: min(1, 2 · P[X ≤ min(b, c)]), X ~ Binomial(b + c, 1/2); 1 when b + c = 0.
// Summed in log space (lgamma, log-sum-exp), so b + c up to 10^5 and beyond neither overflows
// nor underflows to a wrong 0 before the true value does (the smallest result is ~1e-30103 for
// b + c = 10^5, which is 0 in double).
double McNemarExactP(int64_t b, int64_t c);

}  // namespace kvaudit
