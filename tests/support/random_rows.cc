#include "support/random_rows.h"

#include <cmath>
#include <numbers>

namespace kvaudit::testing {

uint64_t Rng::NextU64() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint32_t Rng::Below(uint32_t n) {
  // Lemire's multiply-shift with rejection of the 2^32 mod n low values that would bias it.
  const uint32_t threshold = static_cast<uint32_t>(-n) % n;
  for (;;) {
    const uint64_t m = (NextU64() >> 32) * static_cast<uint64_t>(n);
    if (static_cast<uint32_t>(m) >= threshold) return static_cast<uint32_t>(m >> 32);
  }
}

float Rng::Uniform() { return static_cast<float>(NextU64() >> 40) * 0x1p-24f; }

float Rng::Uniform(float lo, float hi) { return std::fma(hi - lo, Uniform(), lo); }

float Rng::Normal(float sigma) {
  double z;
  if (have_spare_) {
    have_spare_ = false;
    z = spare_;
  } else {
    const double u1 = (static_cast<double>(NextU64() >> 11) + 1.0) * 0x1p-53;  // (0, 1]: log is finite
    const double u2 = static_cast<double>(NextU64() >> 11) * 0x1p-53;          // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(t);
    have_spare_ = true;
    z = r * std::cos(t);
  }
  return sigma * static_cast<float>(z);
}

std::vector<float> NormalRows(int64_t rows, int64_t n, uint64_t seed, float sigma) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(rows * n));
  for (float& v : x) v = rng.Normal(sigma);
  return x;
}

std::vector<float> UniformRows(int64_t rows, int64_t n, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(rows * n));
  for (float& v : x) v = rng.Uniform(lo, hi);
  return x;
}

std::vector<uint8_t> RandomBytes(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> b(static_cast<size_t>(n));
  for (uint8_t& v : b) v = static_cast<uint8_t>(rng.NextU64() >> 56);
  return b;
}

}  // namespace kvaudit::testing
