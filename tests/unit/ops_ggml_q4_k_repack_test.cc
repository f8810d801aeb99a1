// ops/ggml/q4_k_repack: the emulation of llama.cpp's repacked q4_K product, checked without
// llama.cpp (its bits against llama.cpp's own outputs are checked from a dump of llama.cpp's
// products). Here: closeness to an exact reference, the gemm/gemv split forward_mul_mat makes, row
// maps, exact small-integer cases, and the two q8_K quantizers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/isa.h"
#include "ops/ggml/q4_k_lanes.h"
#include "ops/ggml/q4_k_repack.h"
#include "ops/weight_matrix.h"
#include "quant/ggml_blocks.h"
#include "support/random_rows.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit {
namespace {

using ggml::Q8KActivationRow;

constexpr int64_t kBlock = ggml::kQK_K;                       // 256
constexpr int64_t kBlockBytes = sizeof(ggml::BlockQ4_K);      // 144
constexpr int kScaleOff = offsetof(ggml::BlockQ4_K, scales);  // 4
constexpr int kQsOff = offsetof(ggml::BlockQ4_K, qs);         // 16

// Random q4_K rows [rows, cols]: random nibbles and 6-bit scales/mins, d and dmin normal(0, 0.01)
// rounded to fp16 (dmin of either sign).
std::vector<uint8_t> RandomQ4K(int64_t rows, int64_t cols, uint64_t seed) {
  const int64_t blocks = rows * cols / kBlock;
  std::vector<uint8_t> bytes = testing::RandomBytes(blocks * kBlockBytes, seed);          // [blocks * 144]
  const std::vector<float> scales = testing::NormalRows(1, 2 * blocks, seed + 1, 0.01f);  // [2 * blocks]
  for (int64_t b = 0; b < blocks; ++b) {
    ggml::StoreF16(&bytes[b * kBlockBytes], std::fabs(scales[2 * b]));
    ggml::StoreF16(&bytes[b * kBlockBytes + 2], scales[2 * b + 1]);
  }
  return bytes;
}

WeightView ViewOf(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, const int32_t* row_map = nullptr) {
  WeightView w;
  w.data = bytes.data();
  w.type = QuantType::kQ4_K;
  w.rows = rows;
  w.cols = cols;
  w.row_map = row_map;
  return w;
}

// Weight element l of stored row bytes, exactly (double holds fp16·6-bit·4-bit exactly), as the
// two parts d·sc·q and dmin·m.
void ExactWeight(const uint8_t* row, int64_t l, double* scaled, double* min) {
  const uint8_t* blk = row + (l / kBlock) * kBlockBytes;
  const int e = static_cast<int>(l % kBlock), j = e / 32;
  int sc = 0, m = 0;
  ggml::ScaleMinK4(j, blk + kScaleOff, &sc, &m);
  const uint8_t byte = blk[kQsOff + 32 * (e / 64) + e % 32];
  const int q = (e % 64) < 32 ? (byte & 0x0f) : (byte >> 4);
  *scaled = static_cast<double>(ggml::LoadF16(blk)) * sc * q;
  *min = static_cast<double>(ggml::LoadF16(blk + 2)) * m;
}

// Exact Σ w·(d·q8) of one output, and the stated error bound: with S = Σ over sub-blocks of
// |Σ d·sc·q·a| + |Σ dmin·m·a| (a = the q8_K-dequantized activation), the kernels' f32 steps
// (int -> f32, the scale products, ≤ 4·nb fmas per accumulator, the final subtraction) stay
// within (4·nb + 5)·2^-24·S of the exact value.
struct ExactValue {
  double value, bound;
};
ExactValue ExactOutput(const uint8_t* row, const Q8KActivationRow& a, int64_t k) {
  double value = 0, s = 0;
  for (int64_t sub = 0; sub < k / 32; ++sub) {
    double scaled = 0, min = 0;
    for (int64_t l = sub * 32; l < sub * 32 + 32; ++l) {
      double ws = 0, wm = 0;
      ExactWeight(row, l, &ws, &wm);
      const double x = static_cast<double>(a.d[l / kBlock]) * a.qs[l];
      scaled += ws * x;
      min += wm * x;
    }
    value += scaled - min;
    s += std::fabs(scaled) + std::fabs(min);
  }
  return {value, static_cast<double>(4 * (k / kBlock) + 5) * std::ldexp(1.0, -24) * s};
}

// y [n, rows] for x [n, cols].
std::vector<float> MatMul(const std::vector<float>& x, int64_t n, const WeightView& w) {
  std::vector<float> y(n * w.rows);
  ggml::Q4KRepackedMatMul(x.data(), n, w, y.data());
  return y;
}

bool SameBits(const float* a, const float* b, int64_t count) { return std::memcmp(a, b, count * 4) == 0; }

// QuantizeBlock4x8 on every kernel path against its scalar twin: random blocks, blocks whose
// largest magnitude is positive or negative, integers and half-integers (the ties of the rounding)
// and an all-zero block; the same codes and the same bits of d.
TEST(Q4KRepack, Quantize4x8SimdIsItsScalarTwinOnEveryPath) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(406);
    for (int trial = 0; trial < 2000; ++trial) {
      std::vector<float> x(kBlock);  // [256]
      const uint32_t mode = rng.Below(4);
      for (float& v : x) {
        v = mode == 0   ? 0.0f
            : mode == 1 ? 0.5f * static_cast<float>(static_cast<int>(rng.Below(509)) - 254)
                        : rng.Uniform(-4.0f, 4.0f);
      }
      if (mode == 3) x[rng.Below(kBlock)] = rng.Below(2) ? 127.0f : -127.0f;
      int8_t simd[kBlock], scalar[kBlock];  // [256] codes
      const float d_simd = ggml::QuantizeBlock4x8(x.data(), simd);
      const float d_scalar = ggml::QuantizeBlock4x8Scalar(x.data(), scalar);
      ASSERT_EQ(std::memcmp(simd, scalar, kBlock), 0) << "trial " << trial;
      ASSERT_TRUE(SameBits(&d_simd, &d_scalar, 1)) << "trial " << trial;
    }
  });
}

// One group of 8 q4_K rows against 1 to 4 activation rows, gemm (4 steps) or gemv (1 step): random
// rows, and blocks at the bounds of the integer sums (nibbles all 0xF, scales and mins all 63, codes
// all -128 or 127: a gemv's |Σ sc·dot| then passes 2^24, where its f32 conversion rounds), d from
// 2^-14 to 2^14.
struct GroupCase {
  int64_t nb = 0;
  int steps = 0, count = 0, n_x = 0;
  std::vector<uint8_t> w;                 // [8 rows × nb × 144]
  std::vector<ggml::Q8KActivationRow> x;  // [n_x]
  const uint8_t* rows[8] = {};            // [8] row r's blocks in w
};
GroupCase RandomGroupCase(testing::Rng& rng, int trial) {
  GroupCase g;
  g.nb = 1 + rng.Below(6);
  g.steps = trial % 2 == 0 ? 4 : 1, g.count = 1 + static_cast<int>(rng.Below(8));
  g.n_x = 1 + static_cast<int>(rng.Below(4));
  g.w = RandomQ4K(8, g.nb * kBlock, 900 + trial);
  g.x.resize(g.n_x);
  for (ggml::Q8KActivationRow& xa : g.x) {
    xa.d.resize(g.nb), xa.qs.resize(g.nb * kBlock), xa.sub_sums.assign(g.nb * 8, 0);
    for (int64_t b = 0; b < g.nb; ++b) {
      const uint32_t mode = rng.Below(4);
      xa.d[b] = testing::RandomF32Scale(rng);
      for (int64_t i = 0; i < kBlock; ++i) {
        xa.qs[b * kBlock + i] = mode == 1   ? int8_t{-128}
                                : mode == 2 ? int8_t{127}
                                            : static_cast<int8_t>(static_cast<int>(rng.Below(256)) - 128);
        xa.sub_sums[b * 8 + i / 32] += xa.qs[b * kBlock + i];
      }
    }
  }
  for (int64_t b = 0; b < g.nb; ++b) {
    const uint32_t mode = rng.Below(3);
    for (int r = 0; r < 8 && mode != 0; ++r) {
      uint8_t* blk = &g.w[(r * g.nb + b) * kBlockBytes];
      if (mode == 1) std::memset(blk + kQsOff, 0xFF, kBlock / 2), std::memset(blk + kScaleOff, 0xFF, 12);
      ggml::StoreF16(blk, std::ldexp(1.0f, static_cast<int>(rng.Below(29)) - 14));
    }
  }
  for (int r = 0; r < 8; ++r) g.rows[r] = &g.w[r * g.nb * kBlockBytes];
  return g;
}

std::string Describe(const GroupCase& g, int trial) {
  return "trial " + std::to_string(trial) + ", " + std::to_string(g.count) + " rows, " + std::to_string(g.n_x) +
         " activation rows, " + std::to_string(g.steps) + " steps";
}

// Outputs [4 activation rows, ldy 9] start at 7: nothing may be written past the group's rows.
void ExpectOnlyGroupWritten(const std::vector<float>& y, const GroupCase& g) {
  for (int a = 0; a < 4; ++a)
    for (int l = (a < g.n_x ? g.count : 0); l < 9; ++l) ASSERT_EQ(y[a * 9 + l], 7.0f) << a << " " << l;
}

// Q4KGroupRows on every kernel path against its scalar twin: the same bits in every output.
TEST(Q4KRepack, GroupRowsSimdIsItsScalarTwinOnEveryPath) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(405);
    for (int trial = 0; trial < 1500; ++trial) {
      const GroupCase g = RandomGroupCase(rng, trial);
      std::vector<float> simd(4 * 9, 7.0f), scalar(simd);  // [4 activation rows, ldy 9]
      ggml::Q4KGroupRows(g.rows, g.count, g.x.data(), g.n_x, g.nb, g.steps, simd.data(), 9);
      ggml::Q4KGroupRowsScalar(g.rows, g.count, g.x.data(), g.n_x, g.nb, g.steps, scalar.data(), 9);
      ASSERT_TRUE(SameBits(simd.data(), scalar.data(), 4 * 9)) << Describe(g, trial);
      ExpectOnlyGroupWritten(simd, g);
    }
  });
}

// The lanes' packing on every kernel path writes its scalar twin's bytes, and the lanes' product on
// the packed group (every path, and its scalar twin) gives Q4KGroupRowsScalar's bits: the two
// layouts are one arithmetic.
TEST(Q4KRepack, LanesGiveTheGroupRowsBitsOnEveryPath) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(407);
    for (int trial = 0; trial < 1500; ++trial) {
      const GroupCase g = RandomGroupCase(rng, trial);
      std::vector<uint8_t> packed(g.nb * ggml::kQ4KLaneBlockBytes, 0xAB), twin(packed.size(), 0xCD);
      ggml::PackQ4KLanes(g.rows, g.count, g.nb, packed.data());
      ggml::PackQ4KLanesScalar(g.rows, g.count, g.nb, twin.data());
      ASSERT_EQ(packed, twin) << Describe(g, trial);
      std::vector<float> lanes(4 * 9, 7.0f), lanes_scalar(lanes), group(lanes);  // [4 activation rows, ldy 9]
      ggml::Q4KLaneRows(packed.data(), g.count, g.x.data(), g.n_x, g.nb, g.steps, lanes.data(), 9);
      ggml::Q4KLaneRowsScalar(packed.data(), g.count, g.x.data(), g.n_x, g.nb, g.steps, lanes_scalar.data(), 9);
      ggml::Q4KGroupRowsScalar(g.rows, g.count, g.x.data(), g.n_x, g.nb, g.steps, group.data(), 9);
      ASSERT_TRUE(SameBits(lanes.data(), group.data(), 4 * 9)) << Describe(g, trial);
      ASSERT_TRUE(SameBits(lanes_scalar.data(), group.data(), 4 * 9)) << Describe(g, trial);
      ExpectOnlyGroupWritten(lanes, g);
    }
  });
}

TEST(Q4KRepack, GemmAndGemvRowsAreWithinTheBoundOfTheExactProduct) {
  const int64_t rows = 24, cols = 1024, n = 7;  // rows 0..3: gemm; 4..6: gemv
  const std::vector<uint8_t> wb = RandomQ4K(rows, cols, 11);
  const std::vector<float> x = testing::NormalRows(n, cols, 12);  // [n, cols]
  const std::vector<float> y = MatMul(x, n, ViewOf(wb, rows, cols));
  for (int64_t i = 0; i < n; ++i) {
    Q8KActivationRow a;
    if (i < 4)
      ggml::QuantizeQ8KRow4x8(&x[i * cols], cols, &a);
    else
      ggml::QuantizeQ8KRowRef(&x[i * cols], cols, &a);
    for (int64_t r = 0; r < rows; ++r) {
      const ExactValue e = ExactOutput(&wb[r * (cols / kBlock) * kBlockBytes], a, cols);
      EXPECT_NEAR(y[i * rows + r], e.value, e.bound) << "row " << i << " output " << r;
    }
  }
}

TEST(Q4KRepack, GemmAndGemvOfTheSameRowsAgreeWithinTheirBounds) {
  const int64_t rows = 16, cols = 512;
  const std::vector<uint8_t> wb = RandomQ4K(rows, cols, 21);
  const std::vector<float> x = testing::NormalRows(4, cols, 22);  // [4, cols]
  const std::vector<float> gemm = MatMul(x, 4, ViewOf(wb, rows, cols));
  int differ = 0;
  for (int64_t i = 0; i < 4; ++i) {
    const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);  // [1, cols]
    const std::vector<float> gemv = MatMul(xi, 1, ViewOf(wb, rows, cols));
    Q8KActivationRow a;
    ggml::QuantizeQ8KRowRef(xi.data(), cols, &a);
    for (int64_t r = 0; r < rows; ++r) {
      const double bound = 2 * ExactOutput(&wb[r * (cols / kBlock) * kBlockBytes], a, cols).bound;
      EXPECT_NEAR(gemm[i * rows + r], gemv[r], bound) << "row " << i << " output " << r;
      differ += gemm[i * rows + r] != gemv[r];
    }
  }
  EXPECT_GT(differ, 0) << "the gemm (4 fmas per super-block) and gemv (1) orders should differ somewhere";
}

// Row i's output depends only on x[i], the weights and whether i < n - n % 4 (gemm) or not (gemv),
// and not on which layout multiplies it: n = 19 and n = 8 run on the packed lanes (8 rows or more),
// n <= 7 on the rows as stored.
TEST(Q4KRepack, EachRowIsBitwiseTheSameInAnySplitThatKeepsItsKernel) {
  const int64_t rows = 16, cols = 512, n = 19;  // rows 0..15: gemm; 16..18: gemv
  const std::vector<uint8_t> wb = RandomQ4K(rows, cols, 31);
  const WeightView w = ViewOf(wb, rows, cols);
  const std::vector<float> x = testing::NormalRows(n, cols, 32);  // [n, cols]
  const std::vector<float> all = MatMul(x, n, w);
  auto rows_of = [&](int64_t i0, int64_t count) {
    return std::vector<float>(x.begin() + i0 * cols, x.begin() + (i0 + count) * cols);
  };
  for (int64_t g = 0; g < 16; g += 4) {  // each group of 4 alone: gemm again
    EXPECT_TRUE(SameBits(MatMul(rows_of(g, 4), 4, w).data(), &all[g * rows], 4 * rows)) << "gemm group " << g;
  }
  EXPECT_TRUE(SameBits(MatMul(rows_of(0, 8), 8, w).data(), all.data(), 8 * rows));
  EXPECT_TRUE(SameBits(MatMul(rows_of(16, 3), 3, w).data(), &all[16 * rows], 3 * rows));  // n < 4: all gemv
  for (int64_t i = 16; i < n; ++i) {
    EXPECT_TRUE(SameBits(MatMul(rows_of(i, 1), 1, w).data(), &all[i * rows], rows)) << "gemv row " << i;
  }
  // Rows 4..7 as the gemm's rows (n = 8) and as gemv rows (n = 7: rows 4..6) differ somewhere.
  const std::vector<float> eight = MatMul(rows_of(0, 8), 8, w), seven = MatMul(rows_of(0, 7), 7, w);
  EXPECT_FALSE(SameBits(&seven[4 * rows], &eight[4 * rows], 3 * rows));
}

TEST(Q4KRepack, RowMapsPickTheStoredRows) {
  const int64_t rows = 16, cols = 256, n = 5;
  const std::vector<uint8_t> wb = RandomQ4K(rows, cols, 41);
  std::vector<int32_t> map(rows);  // [rows]: output r reads stored row map[r]
  for (int64_t r = 0; r < rows; ++r) map[r] = static_cast<int32_t>((r * 5 + 3) % rows);
  const std::vector<float> x = testing::NormalRows(n, cols, 42);  // [n, cols]
  const std::vector<float> plain = MatMul(x, n, ViewOf(wb, rows, cols));
  const std::vector<float> mapped = MatMul(x, n, ViewOf(wb, rows, cols, map.data()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(SameBits(&mapped[i * rows + r], &plain[i * rows + map[r]], 1)) << i << ", " << r;
    }
  }
}

// Integer activations with max |x| = 127 quantize exactly (d = ±1, codes ±x), and with d = 1,
// dmin = 0.5 and scales/mins <= 15 every partial sum is a multiple of 0.5 below 2^23 (one
// super-block: |Σ sc·dot| <= 8·15·15·127·32), so exact: both kernels give the exact value.
TEST(Q4KRepack, SmallIntegerCasesAreExactInBothKernels) {
  const int64_t rows = 8, cols = 256, n = 5;
  std::vector<uint8_t> wb = RandomQ4K(rows, cols, 51);
  for (int64_t b = 0; b < rows * cols / kBlock; ++b) {
    ggml::StoreF16(&wb[b * kBlockBytes], 1.0f);
    ggml::StoreF16(&wb[b * kBlockBytes + 2], 0.5f);
    for (int s = 0; s < 8; ++s) wb[b * kBlockBytes + kScaleOff + s] &= 0x0f;  // every 6-bit value <= 15
  }
  testing::Rng rng(52);
  std::vector<float> x(n * cols);  // [n, cols] integers in [-127, 127], 127 in every block
  for (float& v : x) v = static_cast<float>(static_cast<int>(rng.Below(255)) - 127);
  for (int64_t b = 0; b < n * cols / kBlock; ++b) x[b * kBlock + 7] = 127.0f;
  const std::vector<float> y = MatMul(x, n, ViewOf(wb, rows, cols));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0;
      for (int64_t l = 0; l < cols; ++l) {
        double ws = 0, wm = 0;
        ExactWeight(&wb[r * (cols / kBlock) * kBlockBytes], l, &ws, &wm);
        exact += (ws - wm) * x[i * cols + l];
      }
      EXPECT_EQ(y[i * rows + r], exact) << "row " << i << " output " << r;
    }
  }
}

// The two quantizers agree except on sign ties: -a before +a makes the reference take d > 0 (its
// first largest |x|) and the 4x8 quantizer d < 0 (a positive maximum wins); codes are negated.
TEST(Q4KRepack, QuantizersDifferOnlyInTheSignTheyPickOnTies) {
  std::vector<float> x = testing::NormalRows(1, 2 * kBlock, 61);  // [512]
  x[3] = -8.0f, x[100] = 8.0f;                                    // block 0: a tie, negative first
  Q8KActivationRow ref, mat;
  ggml::QuantizeQ8KRowRef(x.data(), 2 * kBlock, &ref);
  ggml::QuantizeQ8KRow4x8(x.data(), 2 * kBlock, &mat);
  EXPECT_GT(ref.d[0], 0.0f);
  EXPECT_EQ(mat.d[0], -ref.d[0]);
  EXPECT_EQ(ref.qs[3], -127);
  for (int64_t l = 0; l < kBlock; ++l) EXPECT_EQ(mat.qs[l], -ref.qs[l]) << l;
  for (int s = 0; s < 8; ++s) EXPECT_EQ(mat.sub_sums[s], -ref.sub_sums[s]) << s;
  EXPECT_EQ(mat.d[1], ref.d[1]);  // block 1: no tie
  for (int64_t l = kBlock; l < 2 * kBlock; ++l) EXPECT_EQ(mat.qs[l], ref.qs[l]) << l;
  for (int s = 0; s < 16; ++s) {
    const int64_t from = s * 32;
    EXPECT_EQ(ref.sub_sums[s], std::accumulate(&ref.qs[from], &ref.qs[from] + 32, 0)) << s;
  }
  std::vector<float> zero(kBlock, 0.0f);  // [256]: d = 0, codes 0
  ggml::QuantizeQ8KRowRef(zero.data(), kBlock, &ref);
  ggml::QuantizeQ8KRow4x8(zero.data(), kBlock, &mat);
  EXPECT_EQ(ref.d[0], 0.0f);
  EXPECT_EQ(mat.d[0], 0.0f);
  EXPECT_EQ(ref.sub_sums, std::vector<int32_t>(8, 0));
  EXPECT_EQ(mat.qs, std::vector<int8_t>(kBlock, 0));
}

// Round half to even on both paths: x·iscale = 0.5 and 1.5 exactly (iscale = ±1 for max 127).
TEST(Q4KRepack, QuantizersRoundHalfToEven) {
  std::vector<float> x(kBlock, 0.0f);  // [256]
  x[0] = -127.0f, x[1] = 0.5f, x[2] = 1.5f, x[3] = -2.5f;
  Q8KActivationRow ref, mat;
  ggml::QuantizeQ8KRowRef(x.data(), kBlock, &ref);  // max -127: iscale = 1
  ggml::QuantizeQ8KRow4x8(x.data(), kBlock, &mat);  // no +127: iscale = 1
  for (const Q8KActivationRow* a : {&ref, &mat}) {
    EXPECT_EQ(a->d[0], 1.0f);
    EXPECT_EQ(a->qs[1], 0);
    EXPECT_EQ(a->qs[2], 2);
    EXPECT_EQ(a->qs[3], -2);
  }
}

}  // namespace
}  // namespace kvaudit
