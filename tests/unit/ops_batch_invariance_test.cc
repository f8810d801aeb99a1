// Batch invariance of the matmul (docs/architecture.md): row t of MatMul over n rows is bitwise the
// n = 1 result for x_t, for every weight type, odd sizes and thread counts; and the SIMD kernels
// follow the canonical order of ops/dot.h exactly (bitwise equal to its scalar emulation; the AVX2
// matmul of the portable build too), checked where the build compiles them (without SIMD kernels
// the entry points ARE the emulation, whose bits kv_cross_build_bits_test.cc pins).
#include <gtest/gtest.h>

#include "base/isa.h"

#include <cstring>
#include <vector>

#include "base/half.h"
#include "support/random_rows.h"
#include "unit/ops_test_inputs.h"
#include "ops/activation.h"
#include "ops/dot.h"
#include "ops/matmul.h"
#include "base/simd.h"

namespace kvaudit {
namespace {

using testing::RandomWeights;
std::vector<float> Random(size_t n, uint32_t seed) { return testing::RandomVector(n, seed); }
const auto& kTypes = testing::kQuantTypes;

TEST(OpsBatchInvariance, MatMulRowsEqualSeparateSingleRowCalls) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (QuantType t : kTypes) {
      for (int in : {1, 15, 17, 100, 385}) {
        for (int out : {1, 5, 37, 130}) {  // 130: not a multiple of the 4-row tile nor the 64-row item
          const WeightMatrix w = RandomWeights(out, in, t, 7);
          const int n = 11;
          const auto x = Random(static_cast<size_t>(n) * in, 8);
          std::vector<float> single(static_cast<size_t>(n) * out);
          ThreadPool p1(1), p2(2);
          for (int r = 0; r < n; ++r) MatMul(x.data() + r * in, 1, w.view(), single.data() + r * out, p1);
          {  // the portable path IS MatMulCanonicalRef: equal trivially there
            std::vector<float> canon(single.size());
            MatMulCanonicalRef(x.data(), n, w.view(), canon.data());
            EXPECT_EQ(std::memcmp(single.data(), canon.data(), single.size() * 4), 0)
                << QuantTypeName(t) << " in " << in << " out " << out << ": gemv vs scalar order";
          }
          for (int m : {2, 3, 4, 5, 11}) {  // batch sizes around the 4-row x tile
            for (ThreadPool* pool : {&p1, &p2}) {
              std::vector<float> y(static_cast<size_t>(m) * out);
              MatMul(x.data(), m, w.view(), y.data(), *pool);
              EXPECT_EQ(std::memcmp(y.data(), single.data(), y.size() * 4), 0)
                  << QuantTypeName(t) << " in " << in << " out " << out << " n " << m << " threads " << pool->size();
            }
          }
        }
      }
    }
  });
}

// The SIMD trees of ops/dot_simd.inl.h, compiled here for AVX-512 the way a kernel pass compiles
// them (base/isa_passes.h), against the scalar tree.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
namespace avx512_trees {
#define KVAUDIT_ISA_AVX512 1
#include "ops/dot_simd.inl.h"
#undef KVAUDIT_ISA_AVX512
void CheckReductionTrees() {
  testing::Rng rng(3);
  for (int rep = 0; rep < 100; ++rep) {
    float a[16][16];
    for (auto& row : a)
      for (float& v : row) v = rng.Normal(1e3f);
    __m512 vs[16];
    for (int j = 0; j < 16; ++j) vs[j] = _mm512_loadu_ps(a[j]);
    float all[16];
    _mm512_storeu_ps(all, ReduceAdd16x16(vs));
    for (int j = 0; j < 16; ++j) {
      const float ref = ReduceLanesRef(a[j]);
      EXPECT_EQ(FloatToBits(ReduceAdd16(vs[j])), FloatToBits(ref));
      EXPECT_EQ(FloatToBits(all[j]), FloatToBits(ref)) << j;
    }
  }
}
}  // namespace avx512_trees
#pragma GCC pop_options

TEST(OpsBatchInvariance, ReductionTreesAgree) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512: the trees cannot run here";
  avx512_trees::CheckReductionTrees();
}

TEST(OpsBatchInvariance, DotKernelsFollowTheScalarOrder) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (int n : {1, 7, 16, 31, 64, 100}) {
      const auto a = Random(n, 1), rows = Random(static_cast<size_t>(37) * n, 2);
      std::vector<float> got(37);
      DotRowsF32(a.data(), rows.data(), n, 37, n, got.data());
      for (int j = 0; j < 37; ++j) {
        const float ref = DotCanonicalScalar(a.data(), rows.data() + j * n, n);
        EXPECT_EQ(FloatToBits(got[j]), FloatToBits(ref)) << "n " << n << " row " << j;
        EXPECT_EQ(FloatToBits(DotF32(a.data(), rows.data() + j * n, n)), FloatToBits(ref)) << "n " << n << " row " << j;
      }
    }
  });
}

TEST(OpsBatchInvariance, ExpSubSumUsesTheLaneOrder) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (int n : {1, 16, 29, 256}) {
      auto x = Random(n, 4);
      std::vector<float> y = x;
      const float s = ExpSubSum(y.data(), n, 0.5f);
      // The same exps summed in the 16-lane order and tree.
      float lanes[16] = {};
      for (int i = 0; i < n; ++i) lanes[i % 16] += y[i];
      EXPECT_EQ(FloatToBits(s), FloatToBits(ReduceLanesRef(lanes))) << n;
    }
  });
}

}  // namespace
}  // namespace kvaudit
