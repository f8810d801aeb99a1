// llama.cpp's dot orders (ops/ggml/vec_dot.h) and weight products (ops/ggml/llamacpp_matmul.h),
// on what can be pinned without llama.cpp: each reduction tree on inputs where the order shows,
// the q8_K quantizer's codes, each dot within rounding of the exact sum of its rounded operands,
// and the matmul's dispatch (tinyBLAS for a batch, vec_dot for one row), thread-count invariance
// and fallback. Bit equality with llama.cpp itself: tests/golden/llamacpp_arithmetic_golden_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/isa.h"
#include "base/thread_pool.h"
#include "ops/ggml/llamacpp_matmul.h"
#include "ops/ggml/vec_dot.h"
#include "ops/matmul.h"
#include "quant/block_formats.h"
#include "quant/q8_activation.h"
#include "quant/quant_type.h"
#include "support/random_rows.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit::ggml {
namespace {

// Lanes whose sum depends on the pairing: 2^24 + 1 is lost unless the 1s meet each other first.
TEST(GgmlReductions, EachTreePairsLanesAsItsSourceDoes) {
  const float big = 16777216.0f;  // 2^24: big + 1 rounds back to big
  // Hsum8 adds (a0+a4) to (a2+a6) first: the two 1s meet and 2 survives beside 2^24.
  const float a[8] = {1, big, 1, 0, 0, 0, 0, 0};
  EXPECT_EQ(Hsum8(a), big + 2);
  // Hadd8 adds (a0+a4) to (a1+a5) first: each 1 meets 2^24 alone and is lost (ties to even).
  EXPECT_EQ(Hadd8(a), big);
  // Reduce16: halves, so lanes 0 and 8 meet first.
  float r[16] = {};
  r[0] = 1;
  r[8] = 1;
  r[1] = big;
  EXPECT_EQ(Reduce16(r), big + 2);
}

double ExactDot(const float* w, const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(w[i]) * x[i];
  return s;
}

TEST(GgmlVecDot, FloatDotsAreTheSumWithinRoundingOnBothBuildsAndTails) {
  for (int64_t n : {8, 32, 96, 100, 256}) {
    const std::vector<float> w = testing::NormalRows(1, n, 3), x = testing::NormalRows(1, n, 4);
    double mag = 0;
    for (int64_t i = 0; i < n; ++i) mag += std::fabs(double(w[i]) * x[i]);
    const double exact = ExactDot(w.data(), x.data(), n);
    for (X86Build b : {X86Build::kAvx2, X86Build::kAvx512}) {
      EXPECT_NEAR(VecDotF32(b, w.data(), x.data(), n), exact, 1e-6 * mag) << n;
      EXPECT_NEAR(VecDotF16(b, w.data(), x.data(), n), exact, 1e-6 * mag) << n;
      if (n % Lanes(b) == 0) {
        EXPECT_NEAR(TinyBlasDot(b, w.data(), x.data(), n), exact, 1e-6 * mag) << n;
      }
    }
  }
}

// Every SIMD kernel of this file against its scalar twin, on the active kernel path (KVAUDIT_ISA
// picks it; make test-paths runs each): the same bits.
TEST(GgmlVecDot, SimdKernelsAreTheirScalarTwinsBitForBit) {
  for (int64_t n : {32, 64, 384, 1024}) {
    const std::vector<float> w = testing::NormalRows(1, n, 31), x = testing::NormalRows(1, n, 32);
    EXPECT_EQ(Steps8(w.data(), x.data(), n), Steps8Scalar(w.data(), x.data(), n)) << n;
    EXPECT_EQ(TinyBlas8(w.data(), x.data(), n), TinyBlas8Scalar(w.data(), x.data(), n)) << n;
    std::vector<int8_t> wc(n), xc(n);  // [n] codes
    for (int64_t i = 0; i < n; ++i) {
      wc[i] = static_cast<int8_t>((i * 37) % 255 - 127);
      xc[i] = static_cast<int8_t>((i * 91) % 255 - 127);
    }
    std::vector<float> wd(n / 32), xd(n / 32);  // [n/32] scales
    for (int64_t b = 0; b < n / 32; ++b) wd[b] = w[b], xd[b] = x[b];
    EXPECT_EQ(
        DotQ8Blocks(VecDotKind::kSym, wc.data(), wd.data(), nullptr, xc.data(), xd.data(), nullptr, n / 32),
        DotQ8BlocksScalar(VecDotKind::kSym, wc.data(), wd.data(), nullptr, xc.data(), xd.data(), nullptr, n / 32));
  }
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// DotQ6_KQ8_K on every kernel path against its scalar twin: 12,000 super-blocks of random codes,
// scales (int8 -128..127, fp16 subnormal to 65504) and activations, codes at their bounds.
TEST(GgmlVecDot, Q6KSimdIsItsScalarTwinBitForBitOnEveryPath) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(606);
    int64_t blocks = 0;
    for (int trial = 0; blocks < 12000; ++trial) {
      const int64_t nb = 1 + rng.Below(12);
      const std::vector<uint8_t> w =
          testing::RandomBlocks(nb, sizeof(BlockQ6_K), {static_cast<int>(offsetof(BlockQ6_K, d))}, rng);
      const std::vector<BlockQ8_K> x = testing::RandomQ8K(nb, rng);
      const float simd = DotQ6_KQ8_K(w.data(), x.data(), nb), scalar = DotQ6_KQ8_KScalar(w.data(), x.data(), nb);
      ASSERT_TRUE(SameBits(simd, scalar)) << "trial " << trial << ": " << simd << " vs " << scalar;
      blocks += nb;
    }
  });
}

// DotQ6_KQ8_KBatch (one q6_K row against activation rows stored back to back) on every kernel
// path against its scalar twin and DotQ6_KQ8_K of each row, for row counts around its 4 chains.
TEST(GgmlVecDot, Q6KBatchIsItsScalarTwinBitForBitOnEveryPath) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(607);
    for (int trial = 0; trial < 300; ++trial) {
      const int64_t nb = 1 + rng.Below(6), n_act = 1 + rng.Below(11), ldo = 2;
      const std::vector<uint8_t> w =
          testing::RandomBlocks(nb, sizeof(BlockQ6_K), {static_cast<int>(offsetof(BlockQ6_K, d))}, rng);
      const std::vector<BlockQ8_K> x = testing::RandomQ8K(n_act * nb, rng);  // [n_act, nb]
      std::vector<float> simd(n_act * ldo), scalar(n_act * ldo);             // [n_act, ldo], column 0
      DotQ6_KQ8_KBatch(w.data(), x.data(), nb, n_act, simd.data(), ldo);
      DotQ6_KQ8_KBatchScalar(w.data(), x.data(), nb, n_act, scalar.data(), ldo);
      for (int64_t t = 0; t < n_act; ++t) {
        ASSERT_TRUE(SameBits(simd[t * ldo], scalar[t * ldo])) << "trial " << trial << " row " << t;
        ASSERT_TRUE(SameBits(simd[t * ldo], DotQ6_KQ8_K(w.data(), x.data() + t * nb, nb))) << "trial " << trial;
      }
    }
  });
}

// DotQ8BlockRow (each 32-element format dotted as stored) on every kernel path against its scalar
// twin and against DotQ8Blocks of the expanded row: 12,000 blocks per format and kind. The q8 codes
// stay in -127..127, what llama.cpp's quantize_row_q8_0/_q8_1 give: the AVX2 sign trick
// (maddubs(|x|, sign(y, x))) differs from the exact product only for a code of -128.
TEST(GgmlVecDot, BlockRowDotIsTheExpandedDotBitForBitOnEveryPath) {
  struct Format {
    QuantType type;
    int64_t bytes;
    bool has_m;  // an fp16 m after d
    VecDotKind kind;
    void (*to_codes)(const uint8_t*, int64_t, BlockCodes);
  };
  const Format formats[] = {
      {QuantType::kQ4_0, sizeof(BlockQ4_0), false, VecDotKind::kSym, Q4_0ToCodes},
      {QuantType::kQ4_1, sizeof(BlockQ4_1), true, VecDotKind::kAffine, Q4_1ToCodes},
      {QuantType::kQ5_0, sizeof(BlockQ5_0), false, VecDotKind::kSym, Q5_0ToCodes},
      {QuantType::kQ5_1, sizeof(BlockQ5_1), true, VecDotKind::kAffine, Q5_1ToCodes},
      {QuantType::kQ8_0, sizeof(BlockQ8_0), false, VecDotKind::kSym, Q8_0ToCodes},
      {QuantType::kIQ4_NL, sizeof(BlockIq4Nl), false, VecDotKind::kIq4Nl, Iq4NlToCodes},
      {QuantType::kIQ4_NL, sizeof(BlockIq4Nl), false, VecDotKind::kSym, Iq4NlToCodes},
  };
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (const Format& f : formats) {
      testing::Rng rng(700 + static_cast<int>(f.type));
      for (int64_t blocks = 0, trial = 0; blocks < 12000; ++trial) {
        const int64_t nb = 1 + rng.Below(16);
        const std::vector<uint8_t> w =
            testing::RandomBlocks(nb, f.bytes, f.has_m ? std::vector<int>{0, 2} : std::vector<int>{0}, rng);
        std::vector<int8_t> qc(nb * 32), kc(nb * 32);             // [nb·32] activation, weight codes
        std::vector<float> qd(nb), qm(nb), kd(nb), km(nb, 0.0f);  // [nb] scales, sums
        for (int8_t& q : qc) q = static_cast<int8_t>(static_cast<int>(rng.Below(255)) - 127);
        for (int64_t b = 0; b < nb; ++b) qd[b] = testing::RandomF32Scale(rng), qm[b] = testing::RandomF32Scale(rng);
        f.to_codes(w.data(), nb * 32, {kc.data(), kd.data(), km.data()});
        const float simd = DotQ8BlockRow(f.type, f.kind, w.data(), qc.data(), qd.data(), qm.data(), nb);
        const float scalar = DotQ8BlockRowScalar(f.type, f.kind, w.data(), qc.data(), qd.data(), qm.data(), nb);
        const float expanded =
            DotQ8Blocks(f.kind, kc.data(), kd.data(), km.data(), qc.data(), qd.data(), qm.data(), nb);
        ASSERT_TRUE(SameBits(simd, scalar))
            << QuantTypeName(f.type) << " trial " << trial << ": " << simd << " vs " << scalar;
        ASSERT_TRUE(SameBits(simd, expanded)) << QuantTypeName(f.type) << " trial " << trial;
        blocks += nb;
      }
    }
  });
}

// The several-dot kernels (DotQ8BlockRows: weight rows as stored against one activation row;
// DotQ8BlocksBatch: expanded weight rows against activation rows) on every kernel path against
// their scalar twins and the one-dot kernels, for row counts around the 4 interleaved chains and
// the 4 × 2 tile.
TEST(GgmlVecDot, SeveralDotKernelsAreTheirScalarTwinsBitForBitOnEveryPath) {
  struct Format {
    QuantType type;
    int64_t bytes;
    bool has_m;  // an fp16 m after d
    VecDotKind kind;
  };
  const Format formats[] = {
      {QuantType::kQ4_0, sizeof(BlockQ4_0), false, VecDotKind::kSym},
      {QuantType::kQ4_1, sizeof(BlockQ4_1), true, VecDotKind::kAffine},
      {QuantType::kQ5_0, sizeof(BlockQ5_0), false, VecDotKind::kSym},
      {QuantType::kQ5_1, sizeof(BlockQ5_1), true, VecDotKind::kAffine},
      {QuantType::kQ8_0, sizeof(BlockQ8_0), false, VecDotKind::kSym},
      {QuantType::kIQ4_NL, sizeof(BlockIq4Nl), false, VecDotKind::kIq4Nl},
      {QuantType::kIQ4_NL, sizeof(BlockIq4Nl), false, VecDotKind::kSym},
  };
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (const Format& f : formats) {
      testing::Rng rng(900 + static_cast<int>(f.type));
      for (int trial = 0; trial < 60; ++trial) {
        const int64_t nb = 1 + rng.Below(13), rows = 1 + rng.Below(11);
        const std::vector<uint8_t> w =  // [rows, nb blocks]
            testing::RandomBlocks(rows * nb, f.bytes, f.has_m ? std::vector<int>{0, 2} : std::vector<int>{0}, rng);
        std::vector<int8_t> qc(rows * nb * 32);           // [rows, nb·32] activation codes
        std::vector<float> qd(rows * nb), qm(rows * nb);  // [rows, nb] their scales, sums
        for (int8_t& q : qc) q = static_cast<int8_t>(static_cast<int>(rng.Below(255)) - 127);
        for (int64_t i = 0; i < rows * nb; ++i)
          qd[i] = testing::RandomF32Scale(rng), qm[i] = testing::RandomF32Scale(rng);
        const int64_t row_bytes = nb * f.bytes;
        std::vector<float> simd(rows), scalar(rows);  // [rows]
        DotQ8BlockRows(f.type, f.kind, w.data(), row_bytes, rows, qc.data(), qd.data(), qm.data(), nb, simd.data());
        DotQ8BlockRowsScalar(f.type, f.kind, w.data(), row_bytes, rows, qc.data(), qd.data(), qm.data(), nb,
                             scalar.data());
        for (int64_t r = 0; r < rows; ++r) {
          const float one =
              DotQ8BlockRow(f.type, f.kind, w.data() + r * row_bytes, qc.data(), qd.data(), qm.data(), nb);
          ASSERT_TRUE(SameBits(simd[r], scalar[r])) << QuantTypeName(f.type) << " trial " << trial << " row " << r;
          ASSERT_TRUE(SameBits(simd[r], one)) << QuantTypeName(f.type) << " trial " << trial << " row " << r;
        }
        // Several expanded weight rows (around the 4 × 2 tile) against the activation rows, written at
        // out[t·ldo + i] with ldo > n_w: the cells between stay as they were.
        const int64_t n_w = 1 + rng.Below(9), ldo = n_w + 2;
        std::vector<int8_t> kcs(n_w * nb * 32);                // [n_w, nb·32]
        std::vector<float> kds(n_w * nb), kms(n_w * nb, 0.f);  // [n_w, nb]
        const std::vector<uint8_t> ws =
            testing::RandomBlocks(n_w * nb, f.bytes, f.has_m ? std::vector<int>{0, 2} : std::vector<int>{0}, rng);
        for (int64_t i = 0; i < n_w; ++i)
          GetQuantTraits(f.type).to_codes(&ws[i * row_bytes], nb * 32, {&kcs[i * nb * 32], &kds[i * nb], &kms[i * nb]});
        std::vector<float> batch(rows * ldo, 7.0f), batch_scalar(rows * ldo, 7.0f);  // [rows, ldo]
        DotQ8BlocksBatch(f.kind, kcs.data(), kds.data(), kms.data(), n_w, qc.data(), qd.data(), qm.data(), nb, rows,
                         batch.data(), ldo);
        DotQ8BlocksBatchScalar(f.kind, kcs.data(), kds.data(), kms.data(), n_w, qc.data(), qd.data(), qm.data(), nb,
                               rows, batch_scalar.data(), ldo);
        for (int64_t t = 0; t < rows; ++t) {
          for (int64_t i = 0; i < ldo; ++i) {
            const float one = i >= n_w
                                  ? 7.0f
                                  : DotQ8Blocks(f.kind, &kcs[i * nb * 32], &kds[i * nb], &kms[i * nb],
                                                qc.data() + t * nb * 32, qd.data() + t * nb, qm.data() + t * nb, nb);
            ASSERT_TRUE(SameBits(batch[t * ldo + i], batch_scalar[t * ldo + i]))
                << QuantTypeName(f.type) << " trial " << trial << " t " << t << " i " << i;
            ASSERT_TRUE(SameBits(batch[t * ldo + i], one)) << QuantTypeName(f.type) << " trial " << trial << " t " << t;
          }
        }
      }
    }
  });
}

TEST(GgmlVecDot, SymmetricBlocksSumScaledIntegerLanes) {
  const int64_t nb = 4;
  std::vector<int8_t> wc(nb * 32), xc(nb * 32);                                        // [nb·32] codes
  std::vector<float> wd = {0.5f, 0.25f, 2.0f, 1.0f}, xd = {1.0f, 4.0f, 0.125f, 3.0f};  // [nb]
  double expect = 0;
  for (int64_t i = 0; i < nb * 32; ++i) {
    wc[i] = static_cast<int8_t>(i % 31 - 15);
    xc[i] = static_cast<int8_t>(127 - i % 255);
    expect += double(wd[i / 32]) * xd[i / 32] * wc[i] * xc[i];
  }
  // Powers of two and small integers: every step is exact, so the order cannot show.
  EXPECT_EQ(DotQ8Blocks(VecDotKind::kSym, wc.data(), wd.data(), nullptr, xc.data(), xd.data(), nullptr, nb),
            static_cast<float>(expect));
}

TEST(GgmlQ8K, QuantizerMapsTheLargestMagnitudeToMinus127AndRoundsHalfToEven) {
  // A negative largest value: iscale = -127/max = 1, d = 1, q = round-half-even(x).
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;
  x[1] = 0.5f;    // -> 0
  x[2] = 1.5f;    // -> 2
  x[3] = 2.5f;    // -> 2
  x[4] = 127.0f;  // the same magnitude later: not the max, -> 127
  x[17] = -3.5f;  // -> -4
  BlockQ8_K b;
  QuantizeQ8_KRow(x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  const int expect[5] = {-127, 0, 2, 2, 127};
  for (int j = 0; j < 5; ++j) EXPECT_EQ(b.qs[j], expect[j]) << j;
  EXPECT_EQ(b.qs[17], -4);
  EXPECT_EQ(b.bsums[0], -127 + 0 + 2 + 2 + 127);
  EXPECT_EQ(b.bsums[1], -4);
  // A positive largest value: iscale = -0.5, d = -2, the codes change sign.
  std::vector<float> y(256, 0.0f);
  y[0] = 254.0f;
  y[1] = 1.0f;  // -0.5 -> 0
  y[2] = 3.0f;  // -1.5 -> -2
  QuantizeQ8_KRow(y.data(), &b, 256);
  EXPECT_EQ(b.d, -2.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 0);
  EXPECT_EQ(b.qs[2], -2);
  // An all-zero block: d = 0, codes 0.
  std::vector<float> z(256, 0.0f);
  QuantizeQ8_KRow(z.data(), &b, 256);
  EXPECT_EQ(b.d, 0.0f);
  EXPECT_EQ(b.qs[5], 0);
}

TEST(GgmlVecDot, Q6KDotIsTheDequantizedSumWithinRounding) {
  const int64_t k = 512;
  const WeightMatrix w = testing::RandomBlockMatrix(1, k, QuantType::kQ6_K, 11);
  const std::vector<float> x = testing::NormalRows(1, k, 12);
  std::vector<BlockQ8_K> xq(k / 256);  // [k/256]
  QuantizeQ8_KRow(x.data(), xq.data(), k);
  std::vector<float> wf(k), xf(k);  // [k] dequantized operands
  WeightRowsToF32(w.view(), 0, 1, wf.data());
  double mag = 0;
  for (int64_t i = 0; i < k; ++i) {
    xf[i] = xq[i / 256].d * xq[i / 256].qs[i % 256];
    mag += std::fabs(double(wf[i]) * xf[i]);
  }
  EXPECT_NEAR(DotQ6_KQ8_K(w.view().row(0), xq.data(), k / 256), ExactDot(wf.data(), xf.data(), k), 1e-5 * mag);
}

// y [n, rows] under llama.cpp's arithmetic with `threads` threads.
std::vector<float> Products(const WeightMatrix& w, const std::vector<float>& x, int64_t n, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(static_cast<size_t>(n * w.rows()));
  LlamaCppMatMul(x.data(), n, w, y.data(), pool);
  return y;
}

TEST(GgmlMatMul, SameBitsOnAnyThreadCountAndBatchesTakeTinyBlas) {
  const int64_t rows = 36, k = 64, n = 5;
  const WeightMatrix w = testing::RandomWeights(rows, k, QuantType::kF16, 7);
  const std::vector<float> x = testing::NormalRows(n, k, 8);
  const std::vector<float> one = Products(w, x, n, 1), two = Products(w, x, n, 2);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0);
  // The batch is tinyBLAS's order; the same row alone is vec_dot's (llama.cpp is not batch invariant).
  std::vector<float> wrow(k), xr(k);  // [k]
  for (int64_t r = 0; r < rows; ++r) {
    WeightRowsToF32(w.view(), r, r + 1, wrow.data());
    for (int64_t i = 0; i < k; ++i) xr[i] = F16ToF32(F32ToF16(x[i]));
    EXPECT_EQ(one[r], TinyBlasDot(kEmulatedBuild, wrow.data(), xr.data(), k));
    EXPECT_EQ(Products(w, x, 1, 1)[r], VecDotF16(kEmulatedBuild, wrow.data(), xr.data(), k));
  }
}

TEST(GgmlMatMul, SymmetricBlockWeightsUseTheX86Q8_0Activations) {
  const int64_t rows = 12, k = 96, n = 3;
  const WeightMatrix w = testing::RandomBlockMatrix(rows, k, QuantType::kQ8_0, 9);
  const std::vector<float> x = testing::NormalRows(n, k, 10);
  const std::vector<float> y = Products(w, x, n, 2);
  std::vector<uint8_t> xq(Q8_0RowBytes(k));                   // [k/32 × 34] one activation row
  std::vector<int8_t> wc(k), xc(k);                           // [k] codes
  std::vector<float> wd(k / 32), xd(k / 32), unused(k / 32);  // [k/32] scales
  for (int64_t t = 0; t < n; ++t) {
    QuantizeQ8_0RowX86(&x[t * k], xq.data(), k);
    Q8_0ToCodes(xq.data(), k, {xc.data(), xd.data(), unused.data()});
    for (int64_t r = 0; r < rows; ++r) {
      Q8_0ToCodes(w.view().row(r), k, {wc.data(), wd.data(), unused.data()});
      EXPECT_EQ(y[t * rows + r],
                DotQ8Blocks(VecDotKind::kSym, wc.data(), wd.data(), nullptr, xc.data(), xd.data(), nullptr, k / 32));
    }
  }
}

TEST(GgmlMatMul, TypesOutsideTheEmulationKeepTheExactProducts) {
  const int64_t rows = 8, k = 256, n = 2;
  const WeightMatrix w = testing::RandomWeights(rows, k, QuantType::kBF16, 13);  // bf16: not emulated
  ASSERT_FALSE(Covers(w.view()));
  const std::vector<float> x = testing::NormalRows(n, k, 14);
  ThreadPool pool(1);
  std::vector<float> exact(n * rows);  // [n, rows]
  MatMul(x.data(), n, w, exact.data(), pool);
  const std::vector<float> y = Products(w, x, n, 1);
  EXPECT_EQ(std::memcmp(y.data(), exact.data(), y.size() * 4), 0);
}

}  // namespace
}  // namespace kvaudit::ggml
