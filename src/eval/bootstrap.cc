#include "eval/bootstrap.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace kvaudit {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): tiny, portable, and good enough for resampling indices.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

size_t WindowDraws::Next(size_t n) {
  // Multiply-shift (Lemire); the bias (n / 2^64) is far below noise.
  return static_cast<size_t>((static_cast<unsigned __int128>(NextRandom(state_)) * n) >> 64);
}

double SortedQuantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double at = std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(at));
  if (i + 1 >= sorted.size()) return sorted.back();
  const double frac = at - static_cast<double>(i);
  return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

double UnsortedQuantile(std::vector<double>& values, double p) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double at = std::clamp(p, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(at));
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(i);
  std::nth_element(values.begin(), nth, values.end());
  if (i + 1 >= values.size()) return *nth;
  const double next = *std::min_element(nth + 1, values.end());  // the (i+1)-th smallest
  return *nth + (at - static_cast<double>(i)) * (next - *nth);
}

double StudentT975(int df) {
  // Exact to the printed digits for df <= 30 (any t table); beyond, the Cornish-Fisher expansion
  // in 1/df to the fourth term (Abramowitz & Stegun 26.7.5), within 1e-6 of the exact value there.
  static constexpr std::array<double, 30> kTable = {
      12.7062, 4.30265, 3.18245, 2.77645, 2.57058, 2.44691, 2.36462, 2.30600, 2.26216, 2.22814,
      2.20099, 2.17881, 2.16037, 2.14479, 2.13145, 2.11991, 2.10982, 2.10092, 2.09302, 2.08596,
      2.07961, 2.07387, 2.06866, 2.06390, 2.05954, 2.05553, 2.05183, 2.04841, 2.04523, 2.04227};
  if (df <= 30) return kTable[static_cast<size_t>(std::max(df, 1) - 1)];
  const double z = kZ975, z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2, d = df;
  const double g1 = (z3 + z) / 4, g2 = (5 * z5 + 16 * z3 + 3 * z) / 96;
  const double g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384;
  const double g4 = (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160;
  return z + g1 / d + g2 / (d * d) + g3 / (d * d * d) + g4 / (d * d * d * d);
}

Interval ExpandedPercentileLevels(int n) {
  if (n < 2) return {0.0, 1.0};
  const double t = std::sqrt(static_cast<double>(n) / (n - 1)) * StudentT975(n - 1);
  return {NormalCdf(-t), NormalCdf(t)};
}

}  // namespace kvaudit
