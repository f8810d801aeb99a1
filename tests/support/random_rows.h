// The one seeded random source of the tests. splitmix64 (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014; the seeding generator of xoshiro) gives 64-bit
// integers and everything else is built on them here, so a seed gives the same numbers with every
// standard library: std::normal_distribution and the other <random> distributions are
// implementation-defined algorithms, and a test's tolerance or recorded value must not move with
// the toolchain.
//   Uniform(): the top 24 bits as a float in [0, 1), exactly (no rounding). Inputs of tests that
//              pin output bits across builds (tests/unit/kv_cross_build_bits_test.cc) use only
//              these and exact integer arithmetic.
//   Normal():  Box–Muller on two of its own 53-bit uniforms in double, rounded to float once. It
//              calls std::log / std::cos / std::sin, so its last bit follows the C library's libm
//              (a double-precision last-bit difference flips the float about once in 2^29 values).
#pragma once

#include <cstdint>
#include <vector>

namespace kvaudit::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t NextU64();                 // splitmix64
  uint32_t Below(uint32_t n);         // uniform integer in [0, n), n > 0 (unbiased)
  float Uniform();                    // [0, 1), a multiple of 2^-24
  float Uniform(float lo, float hi);  // fma(hi − lo, Uniform(), lo): one rounding, on every ISA
  float Normal(float sigma = 1.0f);   // sigma · N(0, 1)

 private:
  uint64_t state_;
  double spare_ = 0;  // Box–Muller makes two normals at a time
  bool have_spare_ = false;
};

// [rows, n] values in row-major order from Rng(seed).
std::vector<float> NormalRows(int64_t rows, int64_t n, uint64_t seed, float sigma = 1.0f);
std::vector<float> UniformRows(int64_t rows, int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
// [n] bytes, uniform over 0..255.
std::vector<uint8_t> RandomBytes(int64_t n, uint64_t seed);

}  // namespace kvaudit::testing
