#include "probe/binomial_interval.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {
namespace {

constexpr double kTail = 0.025;

// The p in (0, 1) where the decreasing function f crosses `level`, by bisection.
template <class F>
double Crossing(F f, double level) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) > level ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double BinomialCdf(int64_t k, int64_t n, double p) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  const double lp = std::log(p), lq = std::log1p(-p), log_n_fact = std::lgamma(static_cast<double>(n) + 1.0);
  auto log_term = [&](int64_t i) {
    const double d = static_cast<double>(i);
    return log_n_fact - std::lgamma(d + 1.0) - std::lgamma(static_cast<double>(n - i) + 1.0) + d * lp +
           static_cast<double>(n - i) * lq;
  };
  double top = -INFINITY;
  for (int64_t i = 0; i <= k; ++i) top = std::max(top, log_term(i));
  double sum = 0;
  for (int64_t i = 0; i <= k; ++i) sum += std::exp(log_term(i) - top);
  return std::min(1.0, std::exp(top + std::log(sum)));
}

Interval ClopperPearson95(int64_t k, int64_t n) {
  KV_CHECK(n >= 1 && k >= 0 && k <= n);
  Interval ci{0.0, 1.0};
  // P[X >= k | p] = 1 − P[X <= k−1 | p] grows with p: lo is where it reaches kTail.
  if (k > 0) ci.lo = Crossing([&](double p) { return BinomialCdf(k - 1, n, p); }, 1 - kTail);
  if (k < n) ci.hi = Crossing([&](double p) { return BinomialCdf(k, n, p); }, kTail);
  return ci;
}

}  // namespace kvaudit
