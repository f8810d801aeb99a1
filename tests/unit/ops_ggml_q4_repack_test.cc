// ops/ggml/q4_repack (llama.cpp's repacked q4_0 / iq4_nl product) and llamacpp_matmul's dispatch of
// the 32-element 4/5-bit types (q4_0, iq4_nl, q4_1, q5_1), checked without llama.cpp (their bits
// against llama.cpp's own products and logits: tests/golden/llamacpp_arithmetic_golden_test.cc).
// Here: closeness to the exact product of the dequantized weights and q8_0 activations, gemm and
// gemv rows agreeing bit for bit, row maps, row splits and thread counts, exact small-integer
// cases, and which kernel each type and batch takes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "ops/ggml/llamacpp_matmul.h"
#include "ops/ggml/q4_repack.h"
#include "ops/ggml/vec_dot.h"
#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"
#include "quant/quant_type.h"
#include "support/random_rows.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit::ggml {
namespace {

constexpr QuantType kRepackedTypes[] = {QuantType::kQ4_0, QuantType::kIQ4_NL, QuantType::kMXFP4};

WeightView WithRowMap(WeightView w, const int32_t* row_map) {
  w.row_map = row_map;
  return w;
}

// y [n, w.rows] by the repacked path.
std::vector<float> Repacked(const std::vector<float>& x, int64_t n, const WeightView& w) {
  std::vector<float> y(static_cast<size_t>(n * w.rows));
  Q4RepackedMatMul(x.data(), n, w, y.data());
  return y;
}

// y [n, w.rows()] by llamacpp_matmul with `threads` threads.
std::vector<float> Products(const WeightMatrix& w, const std::vector<float>& x, int64_t n, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(static_cast<size_t>(n * w.rows()));
  LlamaCppMatMul(x.data(), n, w, y.data(), pool);
  return y;
}

bool SameBits(const float* a, const float* b, int64_t count) { return std::memcmp(a, b, count * 4) == 0; }

// The exact Σ w·(d·q8) of one output (double holds each fp16·code·fp16·code product exactly) and the
// stated bound: with S = Σ over blocks of |d_w·d_x·dot|, the kernels' f32 steps (the scale product
// and one fma per block) stay within (nb + 2)·2^-24·S of it.
struct ExactValue {
  double value, bound;
};
ExactValue ExactOutput(const WeightView& w, int64_t r, const Q8_0Activations& a, int64_t i) {
  const int64_t k = w.cols, nb = k / kQK;
  std::vector<float> wf(static_cast<size_t>(k));  // [k] the weight row, dequantized (exact in f32)
  GetQuantTraits(w.type).dequantize_ref(w.row(r), wf.data(), k);
  double value = 0, s = 0;
  for (int64_t b = 0; b < nb; ++b) {
    double block = 0;
    for (int64_t l = b * kQK; l < (b + 1) * kQK; ++l) block += double(wf[l]) * a.Scales(i)[b] * a.Codes(i)[l];
    value += block;
    s += std::fabs(block);
  }
  return {value, static_cast<double>(nb + 2) * std::ldexp(1.0, -24) * s};
}

TEST(Q4Repack, OutputsAreWithinTheBoundOfTheExactProduct) {
  for (QuantType t : kRepackedTypes) {
    const int64_t rows = 16, cols = 1024, n = 7;  // rows 0..3: the gemm's; 4..6: the gemv's
    const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, t, 11);
    const std::vector<float> x = testing::NormalRows(n, cols, 12);  // [n, cols]
    const std::vector<float> y = Repacked(x, n, w.view());
    const Q8_0Activations a = QuantizeQ8_0Activations(x.data(), n, cols);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t r = 0; r < rows; ++r) {
        const ExactValue e = ExactOutput(w.view(), r, a, i);
        EXPECT_NEAR(y[i * rows + r], e.value, e.bound) << QuantTypeName(t) << " row " << i << " output " << r;
      }
    }
  }
}

// The gemm and the gemv form the same sequence per output: a row's bits do not depend on its batch.
TEST(Q4Repack, GemmAndGemvRowsHaveTheSameBits) {
  for (QuantType t : kRepackedTypes) {
    const int64_t rows = 24, cols = 384, n = 11;  // rows 0..7: gemm; 8..10: gemv
    const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, t, 21);
    const std::vector<float> x = testing::NormalRows(n, cols, 22);  // [n, cols]
    const std::vector<float> all = Repacked(x, n, w.view());
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);  // [1, cols]: a gemv
      EXPECT_TRUE(SameBits(Repacked(xi, 1, w.view()).data(), &all[i * rows], rows)) << QuantTypeName(t) << " " << i;
    }
    // Rows 1..7 as a batch of 7: rows 5..7, the gemm's above, are now the gemv's.
    const std::vector<float> seven(x.begin() + cols, x.begin() + 8 * cols);  // [7, cols]
    EXPECT_TRUE(SameBits(Repacked(seven, 7, w.view()).data(), &all[rows], 7 * rows)) << QuantTypeName(t);
  }
}

TEST(Q4Repack, RowMapsPickTheStoredRows) {
  const int64_t rows = 16, cols = 256, n = 5;
  const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, QuantType::kIQ4_NL, 31);
  std::vector<int32_t> map(rows);  // [rows]: output r reads stored row map[r]
  for (int64_t r = 0; r < rows; ++r) map[r] = static_cast<int32_t>((r * 5 + 3) % rows);
  const std::vector<float> x = testing::NormalRows(n, cols, 32);  // [n, cols]
  const std::vector<float> plain = Repacked(x, n, w.view());
  const std::vector<float> mapped = Repacked(x, n, WithRowMap(w.view(), map.data()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(SameBits(&mapped[i * rows + r], &plain[i * rows + map[r]], 1)) << i << ", " << r;
    }
  }
}

TEST(Q4Repack, RowSplitsAndThreadCountsGiveTheSameBits) {
  const int64_t rows = 40, cols = 512, n = 6;
  const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, QuantType::kQ4_0, 41);
  const std::vector<float> x = testing::NormalRows(n, cols, 42);  // [n, cols]
  const std::vector<float> whole = Repacked(x, n, w.view());
  const Q8_0Activations a = QuantizeQ8_0Activations(x.data(), n, cols);
  std::vector<float> split(whole.size(), -1.0f);  // [n, rows]
  for (const auto& [r0, r1] : {std::pair<int64_t, int64_t>{0, 8}, {8, 24}, {24, 32}, {32, 40}}) {
    Q4RepackedRows(a, w.view(), r0, r1, split.data(), rows);
  }
  EXPECT_TRUE(SameBits(split.data(), whole.data(), n * rows));
  EXPECT_TRUE(SameBits(Products(w, x, n, 1).data(), whole.data(), n * rows));
  EXPECT_TRUE(SameBits(Products(w, x, n, 3).data(), whole.data(), n * rows));
}

// With every d_w = 1 and integer activations whose blocks all hold 127 (d_x = 1, codes = x), every
// partial sum is an integer below 2^24 (8 blocks · 32 · 127 · 127), so the result is exact.
TEST(Q4Repack, SmallIntegerCasesAreExact) {
  for (QuantType t : kRepackedTypes) {
    const int64_t rows = 8, cols = 256, n = 5;
    WeightMatrix w = testing::RandomBlockMatrix(rows, cols, t, 51);
    const int block_bytes = GetQuantTraits(t).block_bytes;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < cols / kQK; ++b) StoreF16(w.mutable_row(r) + b * block_bytes, 1.0f);
    testing::Rng rng(52);
    std::vector<float> x(n * cols);  // [n, cols] integers in [-127, 127], 127 in every block
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng.Below(255)) - 127);
    for (int64_t b = 0; b < n * cols / kQK; ++b) x[b * kQK + 5] = 127.0f;
    const std::vector<float> y = Repacked(x, n, w.view());
    std::vector<float> wf(cols);  // [cols]
    for (int64_t r = 0; r < rows; ++r) {
      GetQuantTraits(t).dequantize_ref(w.view().row(r), wf.data(), cols);
      for (int64_t i = 0; i < n; ++i) {
        double exact = 0;
        for (int64_t l = 0; l < cols; ++l) exact += double(wf[l]) * x[i * cols + l];
        EXPECT_EQ(y[i * rows + r], exact) << QuantTypeName(t) << " row " << i << " output " << r;
      }
    }
  }
}

// The expanded q8_0 / q8_1 activation rows of x86's quantize_row_q8_0 / _q8_1 [n, k].
struct Q8Rows {
  std::vector<int8_t> codes;  // [n, k]
  std::vector<float> d, s;    // [n, k/32] scales and (q8_1) s = fp16(d·Σq)
};
Q8Rows QuantizeRows(const std::vector<float>& x, int64_t n, int64_t k, bool q8_1) {
  Q8Rows q{std::vector<int8_t>(n * k), std::vector<float>(n * k / kQK), std::vector<float>(n * k / kQK)};
  const int bytes = q8_1 ? 36 : 34, off = q8_1 ? 4 : 2;
  std::vector<uint8_t> row(k / kQK * bytes);  // [k/32 blocks × 34 or 36 B] one row
  for (int64_t i = 0; i < n; ++i) {
    if (q8_1)
      QuantizeQ8_1RowX86(&x[i * k], row.data(), k);
    else
      QuantizeQ8_0RowX86(&x[i * k], row.data(), k);
    for (int64_t b = 0; b < k / kQK; ++b) {
      q.d[i * k / kQK + b] = LoadF16(&row[b * bytes]);
      if (q8_1) q.s[i * k / kQK + b] = LoadF16(&row[b * bytes + 2]);
      std::memcpy(&q.codes[i * k + b * kQK], &row[b * bytes + off], kQK);
    }
  }
  return q;
}

// y[i, r] by DotQ8Blocks of `kind` on w's codes and the q8 rows.
float BlockDot(VecDotKind kind, const WeightMatrix& w, int64_t r, const Q8Rows& q, int64_t i) {
  const int64_t k = w.cols(), nb = k / kQK;
  std::vector<int8_t> codes(k);     // [k]
  std::vector<float> d(nb), m(nb);  // [k/32]
  GetQuantTraits(w.view().type).to_codes(w.view().row(r), k, {codes.data(), d.data(), m.data()});
  return DotQ8Blocks(kind, codes.data(), d.data(), m.data(), &q.codes[i * k], &q.d[i * nb], &q.s[i * nb], nb);
}

TEST(GgmlBlockDispatch, Q4_0Iq4NlAndMxfp4OfRowsMultipleOf8TakeTheRepackedPath) {
  for (QuantType t : kRepackedTypes) {
    const int64_t cols = 160, n = 5;  // 5 blocks
    const std::vector<float> x = testing::NormalRows(n, cols, 61);
    const WeightMatrix packed = testing::RandomBlockMatrix(16, cols, t, 62);
    ASSERT_TRUE(Covers(packed.view()) && Q4Repacked(packed.view()));
    const std::vector<float> y = Products(packed, x, n, 2);
    EXPECT_TRUE(SameBits(y.data(), Repacked(x, n, packed.view()).data(), n * 16)) << QuantTypeName(t);
    // vec_dot's lanes and tree sum in another order: the repacked path is not theirs.
    const Q8Rows q = QuantizeRows(x, n, cols, false);
    int differ = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t r = 0; r < 16; ++r) differ += y[i * 16 + r] != BlockDot(VecDotKind::kSym, packed, r, q, i);
    EXPECT_GT(differ, 0) << QuantTypeName(t);
  }
}

// Rows % 8 != 0: not repacked. q4_0 forms the same lanes in tinyBLAS and vec_dot; iq4_nl's vec_dot
// (one row) alternates two accumulators where tinyBLAS (a batch) keeps one.
TEST(GgmlBlockDispatch, OtherRowCountsTakeTinyBlasForABatchAndVecDotForOneRow) {
  const int64_t rows = 12, cols = 160, n = 4;  // 5 blocks: iq4_nl's vec_dot has an odd last block
  const std::vector<float> x = testing::NormalRows(n, cols, 71);
  const Q8Rows q = QuantizeRows(x, n, cols, false);
  for (QuantType t : {QuantType::kQ4_0, QuantType::kIQ4_NL}) {
    const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, t, 72);
    ASSERT_TRUE(Covers(w.view()) && !Q4Repacked(w.view()));
    const std::vector<float> batch = Products(w, x, n, 2);
    const VecDotKind one_row = t == QuantType::kIQ4_NL ? VecDotKind::kIq4Nl : VecDotKind::kSym;
    int differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
      const std::vector<float> single = Products(w, xi, 1, 1);
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(batch[i * rows + r], BlockDot(VecDotKind::kSym, w, r, q, i)) << QuantTypeName(t);
        EXPECT_EQ(single[r], BlockDot(one_row, w, r, q, i)) << QuantTypeName(t);
        differ += single[r] != batch[i * rows + r];
      }
    }
    if (t == QuantType::kIQ4_NL) {
      EXPECT_GT(differ, 0) << "iq4_nl: vec_dot and tinyBLAS sum in different orders";
    } else {
      EXPECT_EQ(differ, 0) << "q4_0: vec_dot and tinyBLAS form the same lanes";
    }
  }
}

// mxfp4 of rows % 8 != 0: ggml_vec_dot_mxfp4_q8_0 for any batch (llamafile_sgemm has no MXFP4),
// iq4_nl's two-accumulator sequence with the E8M0 half scale; so batch invariant.
TEST(GgmlBlockDispatch, Mxfp4OfOtherRowCountsTakesItsVecDotForAnyBatch) {
  const int64_t rows = 12, cols = 160, n = 4;  // 5 blocks: an odd last block
  const std::vector<float> x = testing::NormalRows(n, cols, 73);
  const Q8Rows q = QuantizeRows(x, n, cols, false);
  const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, QuantType::kMXFP4, 74);
  ASSERT_TRUE(Covers(w.view()) && !Q4Repacked(w.view()));
  const std::vector<float> batch = Products(w, x, n, 2);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
    const std::vector<float> single = Products(w, xi, 1, 1);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(SameBits(&batch[i * rows + r], &single[r], 1)) << i << " " << r;
      EXPECT_EQ(single[r], BlockDot(VecDotKind::kIq4Nl, w, r, q, i)) << i << " " << r;
    }
  }
}

// MUL_MAT_ID (LlamaCppMatMulEachRow): every routed row alone, by the kernel one row takes, checked
// against that kernel itself: the repacked gemv (q4_0 and mxfp4 of rows % 8 == 0), the block vec_dot
// (rows % 8 != 0: q4_0's symmetric one, mxfp4's two-accumulator one), ggml_vec_dot_f32 (f32). The
// same rows as one MUL_MAT batch take tinyBLAS for f32, which sums in another order.
TEST(GgmlBlockDispatch, MulMatIdComputesEachRowAloneByItsOneRowKernel) {
  const int64_t cols = 256, n = 6;
  const std::vector<float> x = testing::NormalRows(n, cols, 91);  // [n, cols]
  const Q8Rows q = QuantizeRows(x, n, cols, false);
  ThreadPool pool(2);
  for (int64_t rows : {12, 16}) {
    for (QuantType t : {QuantType::kF32, QuantType::kMXFP4, QuantType::kQ4_0}) {
      const WeightMatrix w = t == QuantType::kF32 ? testing::RandomWeights(rows, cols, QuantType::kF32, 92)
                                                  : testing::RandomBlockMatrix(rows, cols, t, 92);
      std::vector<float> each(static_cast<size_t>(n * rows));  // [n, rows]
      LlamaCppMatMulEachRow(x.data(), n, w, each.data(), pool);
      for (int64_t i = 0; i < n; ++i) {
        const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);  // [cols]
        std::vector<float> want(static_cast<size_t>(rows));                             // [rows]
        if (t != QuantType::kF32 && rows % 8 == 0) want = Repacked(xi, 1, w.view());
        for (int64_t r = 0; t == QuantType::kF32 && r < rows; ++r)
          want[r] = VecDotF32(kEmulatedBuild, reinterpret_cast<const float*>(w.view().row(r)), xi.data(), cols);
        for (int64_t r = 0; t != QuantType::kF32 && rows % 8 != 0 && r < rows; ++r)
          want[r] = BlockDot(t == QuantType::kMXFP4 ? VecDotKind::kIq4Nl : VecDotKind::kSym, w, r, q, i);
        EXPECT_TRUE(SameBits(&each[i * rows], want.data(), rows)) << QuantTypeName(t) << " rows " << rows << " " << i;
      }
      if (t == QuantType::kF32) {
        EXPECT_FALSE(SameBits(each.data(), Products(w, x, n, 2).data(), n * rows)) << "tinyBLAS sums otherwise";
      }
    }
  }
}

// q4_1 / q5_1: q8_1 activations and ggml_vec_dot_q4_1_q8_1 / _q5_1_q8_1 for any batch (tinyBLAS
// takes neither type), so batch invariant; any row count.
TEST(GgmlBlockDispatch, Q4_1AndQ5_1TakeTheAffineDotOnX86Q8_1Rows) {
  const int64_t cols = 96, n = 5;
  const std::vector<float> x = testing::NormalRows(n, cols, 81);
  const Q8Rows q = QuantizeRows(x, n, cols, true);
  for (QuantType t : {QuantType::kQ4_1, QuantType::kQ5_1}) {
    for (int64_t rows : {12, 16}) {
      const WeightMatrix w = testing::RandomBlockMatrix(rows, cols, t, 82);
      ASSERT_TRUE(Covers(w.view()));
      const std::vector<float> batch = Products(w, x, n, 2);
      for (int64_t i = 0; i < n; ++i) {
        const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
        const std::vector<float> single = Products(w, xi, 1, 1);
        for (int64_t r = 0; r < rows; ++r) {
          EXPECT_EQ(batch[i * rows + r], BlockDot(VecDotKind::kAffine, w, r, q, i)) << QuantTypeName(t);
          EXPECT_TRUE(SameBits(&single[r], &batch[i * rows + r], 1)) << QuantTypeName(t);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvaudit::ggml
