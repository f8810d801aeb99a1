// Canary for a wrong-code bug of g++ 12.2 (Debian 12.2.0-14) with AVX-512 (-mavx512f, -march=native
// on an AVX-512 machine, or code under `#pragma GCC target("avx512f")` as in the AVX-512 kernel
// path, base/isa_passes.h; not x86-64-v3): the SLP vectorizer stores a 4 × 64-bit
// constant whose last element is zero, such as {3, 3, 3, 0}, as a broadcast of the first element
// (vpbroadcastq), so the vector reads {3, 3, 3, 3}. {7, 7, 7, 1} is stored right.
// Found by a unit test of decide/rank_correlation (a literal input read back wrong). The build
// turns the SLP vectorizer off for g++ < 13 (CMakeLists.txt); this test fails if the bug is back,
// in any build of the suite (release, asan), for baseline code and for the AVX-512 kernel path.
#include <gtest/gtest.h>

#include "base/isa.h"

#include <cstdint>
#include <vector>

namespace kvaudit {
namespace {

// The vector's bytes as stored: the barrier makes the compiler write them to memory and read them
// back, instead of folding the constant it knows.
template <class T>
T LastStored(const std::vector<T>& v) {
  asm volatile("" : : "r"(v.data()) : "memory");
  return v.back();
}

#define KVAUDIT_CANARY_BODY                                                               \
  const std::vector<int64_t> i{3, 3, 3, 0};                                               \
  EXPECT_EQ(LastStored(i), 0) << "the compiler stored {3, 3, 3, 0} as a broadcast";       \
  const std::vector<double> d{3, 3, 3, 0};                                                \
  EXPECT_EQ(LastStored(d), 0.0) << "the compiler stored {3., 3., 3., 0.} as a broadcast"; \
  const std::vector<uint64_t> u{7, 7, 7, 0};                                              \
  EXPECT_EQ(LastStored(u), 0u) << "the compiler stored {7, 7, 7, 0} as a broadcast";

// The same code compiled as the AVX-512 kernel path compiles its kernels (the target string of
// base/isa_passes.h): without -fno-tree-slp-vectorize this reads {3, 3, 3, 3} (checked).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,bmi,bmi2,popcnt")
__attribute__((noinline)) void CheckUnderAvx512Target(){KVAUDIT_CANARY_BODY}
#pragma GCC pop_options

TEST(CompilerCanary, FourElementConstantsEndingInZeroAreStoredAsWritten){KVAUDIT_CANARY_BODY}

TEST(CompilerCanary, SameUnderTheAvx512KernelTarget) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512: that code cannot run here";
  CheckUnderAvx512Target();
}

// a*b + c as written is two roundings, also where the target has FMA: the build passes
// -ffp-contract=off (CMakeLists.txt), without which g++ fuses it here and the bits depend on the
// build's -march. (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie, to even), so the
// two-rounding result is 0 and the fused one 2^-24.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
__attribute__((noipa)) float MulAddAsWrittenUnderFmaTarget(float a, float b, float c) { return a * b + c; }
#pragma GCC pop_options
__attribute__((noipa)) float MulAddAsWritten(float a, float b, float c) { return a * b + c; }

TEST(CompilerCanary, MultiplyAddIsNotContractedIntoAnFma) {
  const float a = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
  EXPECT_EQ(MulAddAsWritten(a, a, c), 0.0f);
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "this CPU has no FMA: the fused variant cannot run here";
  EXPECT_EQ(MulAddAsWrittenUnderFmaTarget(a, a, c), 0.0f) << "a*b+c was fused into one FMA (-ffp-contract)";
}

}  // namespace
}  // namespace kvaudit
