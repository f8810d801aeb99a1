// The exact (Clopper-Pearson 1934) 95% interval of a binomial proportion k/n: the probe families'
// rates (cache-induced failures among instances, differing same-seed pairs) are counts of
// independent instances, and with the tens of instances a probe run has, normal approximations
// are far off at rates near 0. Definitions: docs/decision.md "Three outcomes".
#pragma once

#include <cstdint>

#include "eval/bootstrap.h"

namespace kvaudit {

// P[X <= k] for X ~ Binomial(n, p), summed in log space (lgamma, log-sum-exp).
double BinomialCdf(int64_t k, int64_t n, double p);

// [lo, hi] with P[X >= k | lo] = 2.5% (lo = 0 at k = 0) and P[X <= k | hi] = 2.5% (hi = 1 at
// k = n). n >= 1, 0 <= k <= n.
Interval ClopperPearson95(int64_t k, int64_t n);

}  // namespace kvaudit
