// The K-quants' and iq4_xs's llama.cpp dots (ops/ggml/kquant_vec_dot.h) on what can be pinned without
// llama.cpp: each dot within rounding of the exact sum of its dequantized operands, exact equality
// where every step is exact, and the dispatch of LlamaCppMatMul to them (q4_K by its row count,
// iq4_xs's panel by row count and batch). Bit equality with llama.cpp itself:
// tests/golden/llamacpp_arithmetic_golden_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "base/half.h"
#include "base/isa.h"
#include "base/thread_pool.h"
#include "ops/ggml/kquant_vec_dot.h"
#include "ops/ggml/llamacpp_matmul.h"
#include "quant/q8_activation.h"
#include "support/random_rows.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit::ggml {
namespace {

using Dot = float (*)(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
struct Case {
  QuantType type;
  Dot dot;
};
const Case kCases[] = {{QuantType::kQ2_K, DotQ2_KQ8_K},    {QuantType::kQ3_K, DotQ3_KQ8_K},
                       {QuantType::kQ4_K, DotQ4_KQ8_K},    {QuantType::kQ5_K, DotQ5_KQ8_K},
                       {QuantType::kIQ4_XS, DotIq4XsQ8_K}, {QuantType::kIQ4_XS, DotIq4XsQ8_KPanel}};

// Σ w·x in double over the dequantized operands, and Σ |w·x| (the scale of its rounding).
struct Exact {
  double sum = 0, mag = 0;
};
Exact ExactDot(const WeightView& w, int64_t r, const std::vector<BlockQ8_K>& xq) {
  const int64_t k = w.cols;
  std::vector<float> wf(static_cast<size_t>(k));  // [k] row r as llama.cpp dequantizes it
  WeightRowsToF32(w, r, r + 1, wf.data());
  Exact e;
  for (int64_t i = 0; i < k; ++i) {
    const double p = static_cast<double>(wf[i]) * xq[i / kQK_K].d * xq[i / kQK_K].qs[i % kQK_K];
    e.sum += p;
    e.mag += std::fabs(p);
  }
  return e;
}

// Per block: d rounded once, one or two fmas per lane; then Hsum8 and one add; and WeightRowsToF32
// rounds each weight: for nb = 3, about ten roundings of 2^-24 of Σ|w·x| at most. 1e-6 bounds them
// (measured: at most 3.4e-8 over 30 seeds × 64 rows, every type).
constexpr double kRelTol = 1e-6;

TEST(GgmlKQuantVecDot, EachDotIsTheDequantizedSumWithinRounding) {
  const int64_t k = 768, rows = 6;
  for (const Case& c : kCases) {
    const WeightMatrix w = testing::RandomBlockMatrix(rows, k, c.type, 21 + static_cast<int>(c.type));
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> x = testing::NormalRows(1, k, 40 + t, t == 2 ? 1e6f : 1.0f);  // [k]
      std::vector<BlockQ8_K> xq(k / kQK_K);                                                  // [k/256]
      QuantizeQ8_KRow(x.data(), xq.data(), k);
      for (int64_t r = 0; r < rows; ++r) {
        const Exact e = ExactDot(w.view(), r, xq);
        EXPECT_NEAR(c.dot(w.view().row(r), xq.data(), k / kQK_K), e.sum, kRelTol * e.mag)
            << GetQuantTraits(c.type).name << " row " << r << " x " << t;
      }
    }
  }
}

// Weights whose fp16 scales are 1/4, 1/2 or 1 and activations that quantize to themselves (codes
// -1, 0, 1 and a first largest magnitude of -127: d_x = 1) make every step exact: each lane, product
// and partial sum is a multiple of 1/4 below (63·31 + 63)·(k + 127) < 2^22 (iq4_xs: 32·127·(k + 127)),
// so the dot is the exact sum itself.
TEST(GgmlKQuantVecDot, ExactInputsGiveTheExactSum) {
  const int64_t k = 512, rows = 4;
  std::vector<float> x = testing::NormalRows(1, k, 50);  // [k] -1, 0, 1, then one -127
  for (float& v : x) v = std::round(std::fmax(-1.0f, std::fmin(1.0f, v)));
  x[17] = -127.0f;
  std::vector<BlockQ8_K> xq(k / kQK_K);  // [k/256]
  QuantizeQ8_KRow(x.data(), xq.data(), k);
  ASSERT_EQ(xq[0].d, 1.0f);
  for (const Case& c : kCases) {
    WeightMatrix w = testing::RandomBlockMatrix(rows, k, c.type, 60);
    const QuantTraits& info = GetQuantTraits(c.type);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < k / kQK_K; ++b)
        for (int off : F16Fields(c.type)) {  // d and dmin: 1/4, 1/2 or 1
          const uint16_t h = F32ToF16(std::ldexp(1.0f, static_cast<int>((r + b + off) % 3) - 2));
          std::memcpy(w.mutable_row(r) + b * info.block_bytes + off, &h, 2);
        }
    for (int64_t r = 0; r < rows; ++r) {
      const Exact e = ExactDot(w.view(), r, xq);
      EXPECT_EQ(c.dot(w.view().row(r), xq.data(), k / kQK_K), static_cast<float>(e.sum)) << info.name << " row " << r;
    }
  }
}

// Each SIMD dot on every kernel path against its scalar twin: 12,000 super-blocks per type of random
// bytes (some blocks all 0x00 or 0xFF: every code, scale and min at a bound), random finite fp16
// d/dmin (subnormal to 65504) and q8_K activations (codes at ±127 and -128 in some blocks, f32
// scales 2^-100..2^20): the same bits.
TEST(GgmlKQuantVecDot, SimdIsItsScalarTwinBitForBitOnEveryPath) {
  struct Twin {
    QuantType type;
    Dot simd, scalar;
  };
  const Twin twins[] = {{QuantType::kQ2_K, DotQ2_KQ8_K, DotQ2_KQ8_KScalar},
                        {QuantType::kQ3_K, DotQ3_KQ8_K, DotQ3_KQ8_KScalar},
                        {QuantType::kQ4_K, DotQ4_KQ8_K, DotQ4_KQ8_KScalar},
                        {QuantType::kQ5_K, DotQ5_KQ8_K, DotQ5_KQ8_KScalar},
                        {QuantType::kIQ4_XS, DotIq4XsQ8_K, DotIq4XsQ8_KScalar},
                        {QuantType::kIQ4_XS, DotIq4XsQ8_KPanel, DotIq4XsQ8_KPanelScalar}};
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (const Twin& c : twins) {
      const QuantTraits& info = GetQuantTraits(c.type);
      const std::span<const int> f16 = F16Fields(c.type);
      testing::Rng rng(800 + static_cast<int>(c.type));
      for (int64_t blocks = 0, trial = 0; blocks < 12000; ++trial) {
        const int64_t nb = 1 + rng.Below(12);
        const std::vector<uint8_t> w =
            testing::RandomBlocks(nb, info.block_bytes, std::vector<int>(f16.begin(), f16.end()), rng);
        const std::vector<BlockQ8_K> x = testing::RandomQ8K(nb, rng);
        const float simd = c.simd(w.data(), x.data(), nb), scalar = c.scalar(w.data(), x.data(), nb);
        ASSERT_EQ(std::memcmp(&simd, &scalar, 4), 0)
            << info.name << " trial " << trial << ": " << simd << " vs " << scalar;
        blocks += nb;
      }
    }
  });
}

// y [n, rows] under llama.cpp's arithmetic with `threads` threads.
std::vector<float> Products(const WeightMatrix& w, const std::vector<float>& x, int64_t n, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(static_cast<size_t>(n * w.rows()));  // [n, rows]
  LlamaCppMatMul(x.data(), n, w, y.data(), pool);
  return y;
}

// Every output of LlamaCppMatMul is `dot` of its weight row and its q8_K activation row.
void ExpectDispatchedTo(const WeightMatrix& w, const std::vector<float>& x, int64_t n, Dot dot, const char* what) {
  const int64_t k = w.cols(), rows = w.rows();
  const std::vector<float> y = Products(w, x, n, 2);  // [n, rows]
  std::vector<BlockQ8_K> xq(k / kQK_K);               // [k/256] one activation row
  for (int64_t t = 0; t < n; ++t) {
    QuantizeQ8_KRow(&x[t * k], xq.data(), k);
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_EQ(y[t * rows + r], dot(w.view().row(r), xq.data(), k / kQK_K)) << what << " t " << t << " r " << r;
  }
}

TEST(GgmlKQuantMatMul, TakesTheVecDotOfEachTypeAndTheIqPanelForBatchesOfEight) {
  const int64_t k = 512;
  const std::vector<float> x = testing::NormalRows(9, k, 70);  // [9, k]
  for (const Case& c : kCases) {
    if (c.dot == DotIq4XsQ8_KPanel) continue;
    const WeightMatrix w = testing::RandomBlockMatrix(12, k, c.type, 71);  // 12 rows: q4_K not repacked
    ASSERT_TRUE(Covers(w.view()));
    for (int64_t n : {1, 3, 9}) ExpectDispatchedTo(w, x, n, c.dot, GetQuantTraits(c.type).name);
  }
  const WeightMatrix iq = testing::RandomBlockMatrix(16, k, QuantType::kIQ4_XS, 72);  // rows % 8 == 0
  std::vector<BlockQ8_K> xq(k / kQK_K);                                               // [k/256]
  QuantizeQ8_KRow(x.data(), xq.data(), k);
  int differ = 0;  // the two orders must differ somewhere for the checks below to tell them apart
  for (int64_t r = 0; r < 16; ++r)
    differ += DotIq4XsQ8_K(iq.view().row(r), xq.data(), k / kQK_K) !=
              DotIq4XsQ8_KPanel(iq.view().row(r), xq.data(), k / kQK_K);
  ASSERT_GT(differ, 0);
  ExpectDispatchedTo(iq, x, 7, DotIq4XsQ8_K, "iq4_xs, 7 rows: vec_dot");
  ExpectDispatchedTo(iq, x, 8, DotIq4XsQ8_KPanel, "iq4_xs, 8 rows: panel");
  ExpectDispatchedTo(iq, x, 9, DotIq4XsQ8_KPanel, "iq4_xs, 9 rows: panel");
}

}  // namespace
}  // namespace kvaudit::ggml
