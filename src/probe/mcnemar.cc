#include "probe/mcnemar.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {

double McNemarExactP(int64_t b, int64_t c) {
  KV_CHECK(b >= 0 && c >= 0);
  const int64_t n = b + c;
  if (n == 0) return 1.0;
  const int64_t k = std::min(b, c);
  if (2 * k == n) return 1.0;  // b = c: the lower tail holds at least half the mass
  if (n <= 62) {
    // Small tables (the usual case): exact integer binomials, so p is the exact dyadic value
    // (e.g. b = 1, c = 9 gives 22/1024 bit for bit). C(62, 31) < 2^60 and the tail < 2^62.
    uint64_t binom = 1, tail = 0;  // C(n, i), Σ_{j<=i} C(n, j)
    for (int64_t i = 0; i <= k; ++i) {
      tail += binom;
      binom = binom * static_cast<uint64_t>(n - i) / static_cast<uint64_t>(i + 1);
    }
    return std::min(1.0, std::ldexp(static_cast<double>(tail), static_cast<int>(1 - n)));
  }
  // log C(n, i) - n·log 2 for i = 0..k, summed by log-sum-exp around the largest term (i = k,
  // since k < n/2 the terms increase with i).
  const double log_n_fact = std::lgamma(static_cast<double>(n) + 1.0);
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  auto log_term = [&](int64_t i) {
    return log_n_fact - std::lgamma(static_cast<double>(i) + 1.0) - std::lgamma(static_cast<double>(n - i) + 1.0) +
           log_half_n;
  };
  const double top = log_term(k);
  double sum = 0;
  // Terms fall by at least a factor (n-i)/(i+1) > 1 going down from k; stop once they no longer
  // change the sum in double precision.
  for (int64_t i = k; i >= 0; --i) {
    const double rel = std::exp(log_term(i) - top);
    sum += rel;
    if (rel < 1e-18 * sum) break;
  }
  const double log_p = std::log(2.0) + top + std::log(sum);
  return std::min(1.0, std::exp(log_p));
}

}  // namespace kvaudit
