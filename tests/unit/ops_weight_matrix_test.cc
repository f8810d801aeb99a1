// 16-bit weight kernels: exact upcast (SIMD vs scalar), gemv against the double reference for
// every stored dtype, and MatMul on bf16/f16 weights bitwise equal to MatMul on the same weights
// upcast to f32 (the "keep weights 16-bit" change must not change any result).
#include <gtest/gtest.h>

#include "base/isa.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "unit/ops_test_inputs.h"
#include "ops/matmul.h"
#include "base/simd.h"
#include "ops/weight_matrix.h"

namespace kvaudit {
namespace {

using testing::RandomWeights;
std::vector<float> Random(size_t n, uint32_t seed) { return testing::RandomVector(n, seed); }
const auto& kTypes = testing::kQuantTypes;

TEST(OpsWeightMatrix, UpcastIsExactAndMatchesScalar) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (QuantType t : kTypes) {
      for (int cols : {1, 15, 16, 17, 40, 384}) {
        const WeightMatrix w = RandomWeights(9, cols, t, 11);
        std::vector<float> ref(9 * cols), got(9 * cols, -1.0f);
        WeightRowsToF32(w.view(), 2, 9, got.data());
        {  // the portable path IS the reference: equal trivially there
          WeightRowsToF32Ref(w.view(), 2, 9, ref.data());
          EXPECT_EQ(std::memcmp(ref.data(), got.data(), 7 * cols * sizeof(float)), 0)
              << QuantTypeName(t) << " " << cols;
        }
        for (int i = 0; i < 7 * cols; ++i) {  // exact: every upcast value is the stored one
          const uint8_t* row = w.view().row(2 + i / cols);
          const float stored = t == QuantType::kF32    ? reinterpret_cast<const float*>(row)[i % cols]
                               : t == QuantType::kBF16 ? BF16ToF32(reinterpret_cast<const uint16_t*>(row)[i % cols])
                                                        : F16ToF32(reinterpret_cast<const uint16_t*>(row)[i % cols]);
          ASSERT_EQ(FloatToBits(got[i]), FloatToBits(stored)) << QuantTypeName(t) << " " << cols << " " << i;
        }
        EXPECT_EQ(got[7 * cols], -1.0f) << "wrote past the rows asked for";
        if (t == QuantType::kBF16) {  // bf16 -> f32 is the 16-bit shift
          const uint16_t b = reinterpret_cast<const uint16_t*>(w.view().row(2))[0];
          EXPECT_EQ(FloatToBits(got[0]), static_cast<uint32_t>(b) << 16);
        }
      }
    }
  });
}

TEST(OpsWeightMatrix, GemvMatchesReferenceForEveryTypeAndSplit) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (QuantType t : kTypes) {
      for (int in : {1, 15, 16, 17, 33, 64, 384, 1000}) {
        const int out = 37;
        const WeightMatrix w = RandomWeights(out, in, t, 3);
        const auto x = Random(in, 4);
        std::vector<float> ref(out), got(out), split(out);
        GemvRef(x.data(), w.view(), 0, out, ref.data());
        GemvRows(x.data(), w.view(), 0, out, got.data());
        for (int r = 0; r < out; ++r) {
          EXPECT_NEAR(got[r], ref[r], 1e-5 * std::sqrt(in) + 1e-6) << QuantTypeName(t) << " in " << in << " row " << r;
        }
        // A row's result must not depend on which rows share the call (thread splits).
        GemvRows(x.data(), w.view(), 0, 5, split.data());
        GemvRows(x.data(), w.view(), 5, out, split.data());
        EXPECT_EQ(std::memcmp(split.data(), got.data(), out * 4), 0);
      }
    }
  });
}

TEST(OpsWeightMatrix, SixteenBitMatMulEqualsUpcastF32MatMul) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (QuantType t : {QuantType::kBF16, QuantType::kF16}) {
      for (int n : {1, 3, 70}) {
        const int in = 100, out = 150;  // out not a multiple of the 64-row tile
        const WeightMatrix w = RandomWeights(out, in, t, 5);
        std::vector<float> w32(static_cast<size_t>(out) * in);
        WeightRowsToF32Ref(w.view(), 0, out, w32.data());
        const auto x = Random(static_cast<size_t>(n) * in, 6);
        std::vector<float> y16(static_cast<size_t>(n) * out), y32(y16.size()), y16_2(y16.size());
        ThreadPool p1(1), p2(2);
        MatMul(x.data(), n, w.view(), y16.data(), p1);
        MatMul(x.data(), n, in, w32.data(), out, y32.data(), p1);
        MatMul(x.data(), n, w.view(), y16_2.data(), p2);
        EXPECT_EQ(std::memcmp(y16.data(), y32.data(), y16.size() * 4), 0) << QuantTypeName(t) << " n " << n;
        EXPECT_EQ(std::memcmp(y16.data(), y16_2.data(), y16.size() * 4), 0) << QuantTypeName(t) << " n " << n;
        std::vector<float> ref(y16.size());
        MatMulRef(x.data(), n, w.view(), ref.data());
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y16[i], ref[i], 1e-4) << QuantTypeName(t) << " n " << n;
      }
    }
  });
}

}  // namespace
}  // namespace kvaudit
