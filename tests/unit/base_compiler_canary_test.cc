// Canary for a wrong-code bug of g++ 12.2 (Debian 12.2.0-14) with AVX-512 (-march=native on this
// project's machines, or -mavx512f; not -march=x86-64-v3): the SLP vectorizer stores a 4 × 64-bit
// constant whose last element is zero, such as {3, 3, 3, 0}, as a broadcast of the first element
// (vpbroadcastq), so the vector reads {3, 3, 3, 3}. {7, 7, 7, 1} is stored right.
// Found by a unit test of decide/rank_correlation (a literal input read back wrong). The build
// turns the SLP vectorizer off for g++ < 13 (CMakeLists.txt); this test fails if the bug is back,
// in any build of the suite (native, avx2, asan).
#include <gtest/gtest.h>

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

TEST(CompilerCanary, FourElementConstantsEndingInZeroAreStoredAsWritten) {
  const std::vector<int64_t> i{3, 3, 3, 0};
  EXPECT_EQ(LastStored(i), 0) << "the compiler stored {3, 3, 3, 0} as a broadcast";
  const std::vector<double> d{3, 3, 3, 0};
  EXPECT_EQ(LastStored(d), 0.0) << "the compiler stored {3., 3., 3., 0.} as a broadcast";
  const std::vector<uint64_t> u{7, 7, 7, 0};
  EXPECT_EQ(LastStored(u), 0u) << "the compiler stored {7, 7, 7, 0} as a broadcast";
}

}  // namespace
}  // namespace kvaudit
