// ops/ggml/elementwise: SwiGlu's SIMD kernel (llama.cpp's AVX2 ggml_v_silu / ggml_v_expf) against
// its scalar twin on every kernel path. Its bits against llama.cpp itself:
// tests/golden/llamacpp_arithmetic_golden_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/isa.h"
#include "ops/ggml/elementwise.h"
#include "support/random_rows.h"

namespace kvaudit::ggml {
namespace {

// Gates from small to past the exp's scaled ranges (|x| > 126·ln2: the |n| > 126 lanes; |x| >
// 192·ln2: the s1·s1 lanes), alone or mixed with ordinary lanes in one group of 8, and lengths with
// and without a tail of n % 8 elements (libm's expf there).
TEST(GgmlElementwise, SwiGluSimdIsItsScalarTwinBitForBitOnEveryPath) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(515);
    for (int trial = 0; trial < 400; ++trial) {
      const int64_t n = 1 + rng.Below(70);
      const float span = trial % 4 == 0 ? 4.0f : trial % 4 == 1 ? 100.0f : trial % 4 == 2 ? 160.0f : 30.0f;
      std::vector<float> gate(n), up(n);  // [n]
      for (int64_t i = 0; i < n; ++i) gate[i] = rng.Uniform(-span, span), up[i] = rng.Uniform(-2.0f, 2.0f);
      std::vector<float> simd(n), scalar(n);  // [n]
      SwiGlu(gate.data(), up.data(), simd.data(), n);
      SwiGluScalar(gate.data(), up.data(), scalar.data(), n);
      ASSERT_EQ(std::memcmp(simd.data(), scalar.data(), n * sizeof(float)), 0) << "trial " << trial << ", n " << n;
    }
  });
}

}  // namespace
}  // namespace kvaudit::ggml
