// Block Walsh–Hadamard rotation: hand-computed rows, agreement with an explicit H_b/√b matrix product,
// self-inverse, norm and dot-product preservation, SIMD = scalar, and llama.cpp's block-size choice.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "base/isa.h"
#include "kv/formats/int_group.h"
#include "ops/hadamard.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::GaussianRows;
using codec_checks::OutlierRows;

double Norm(const float* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(v[i]) * v[i];
  return std::sqrt(s);
}

TEST(KvHadamard, HandComputedRows) {
  std::vector<float> a = {1, 3};
  HadamardRows(a.data(), 1, 2, 2);  // (1 + 3, 1 − 3)/√2
  EXPECT_FLOAT_EQ(a[0], 4.0f / std::sqrt(2.0f));
  EXPECT_FLOAT_EQ(a[1], -2.0f / std::sqrt(2.0f));
  std::vector<float> b = {1, 2, 3, 4, 1, 0, 0, 0};
  HadamardRows(b.data(), 1, 8, 4);  // H4·(1,2,3,4) = (10, −2, −4, 0), /2; H4·e0 = all ones, /2
  EXPECT_EQ(b, (std::vector<float>{5, -1, -2, 0, 0.5f, 0.5f, 0.5f, 0.5f}));
  std::vector<float> c(16, 0.0f);
  c[0] = 4;
  HadamardRows(c.data(), 1, 16, 16);  // SIMD path: e0 -> all 4/4
  EXPECT_EQ(c, std::vector<float>(16, 1.0f));
}

// Sylvester H_b[i][j] = (−1)^popcount(i & j), the matrix llama.cpp's ggml_gen_hadamard builds.
TEST(KvHadamard, MatchesNaiveMatrixProduct) {
  for (int block : {2, 4, 8, 16, 32, 64, 128}) {
    const int64_t rows = 3, row_len = 256;
    auto x = GaussianRows(rows, row_len, 11 + block);
    std::vector<float> want(x.size());
    const double inv = 1.0 / std::sqrt(static_cast<double>(block));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b0 = 0; b0 < row_len; b0 += block) {
        const float* xb = x.data() + r * row_len + b0;
        for (int i = 0; i < block; ++i) {
          double s = 0;
          for (int j = 0; j < block; ++j) s += (std::popcount(static_cast<unsigned>(i & j)) & 1 ? -1.0 : 1.0) * xb[j];
          want[static_cast<size_t>(r * row_len + b0 + i)] = static_cast<float>(s * inv);
        }
      }
    }
    HadamardRows(x.data(), rows, row_len, block);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(x[i], want[i], 1e-6 * Norm(want.data(), static_cast<int64_t>(want.size()))) << block;
    }
  }
}

TEST(KvHadamard, IsItsOwnInverseAndPreservesNormsAndDots) {
  for (int block : {2, 4, 16, 64, 128}) {
    const int64_t rows = 16, row_len = 128;
    const auto x0 = OutlierRows(rows, row_len, 21), y0 = GaussianRows(rows, row_len, 22);
    auto x = x0, y = y0;
    HadamardRows(x.data(), rows, row_len, block);
    HadamardRows(y.data(), rows, row_len, block);
    for (int64_t r = 0; r < rows; ++r) {
      const float* a0 = x0.data() + r * row_len;
      const float* b0 = y0.data() + r * row_len;
      const float* a = x.data() + r * row_len;
      const float* b = y.data() + r * row_len;
      const double n0 = Norm(a0, row_len);
      EXPECT_NEAR(Norm(a, row_len), n0, 1e-6 * n0);
      double d0 = 0, d = 0;
      for (int64_t i = 0; i < row_len; ++i) {
        d0 += static_cast<double>(a0[i]) * b0[i];
        d += static_cast<double>(a[i]) * b[i];
      }
      EXPECT_NEAR(d, d0, 1e-6 * n0 * Norm(b0, row_len)) << block;
    }
    HadamardRows(x.data(), rows, row_len, block);  // H·H = I
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(x[i], x0[i], 1e-6 * Norm(x0.data() + (i / row_len) * row_len, row_len)) << block;
    }
  }
}

// Every kernel path (the AVX2 and portable ones run the scalar loop; kv_cross_build_bits_test pins it).
TEST(KvHadamard, SimdIsBitIdenticalToScalar) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    // Same butterflies in the same order: not just within 1e-6 but equal.
    for (int block : {16, 32, 64, 128, 256}) {
      for (int64_t row_len : {int64_t{block}, int64_t{3 * block}}) {
        auto a = OutlierRows(5, row_len, 31 + block), b = a;
        HadamardRows(a.data(), 5, row_len, block);
        HadamardRowsRef(b.data(), 5, row_len, block);
        EXPECT_EQ(a, b) << block << " " << row_len;
      }
    }
  });
}

TEST(KvHadamard, BlockSizes) {
  EXPECT_EQ(LargestPow2Divisor(1), 1);
  EXPECT_EQ(LargestPow2Divisor(64), 64);
  EXPECT_EQ(LargestPow2Divisor(80), 16);
  EXPECT_EQ(LargestPow2Divisor(96), 32);
  EXPECT_EQ(LargestPow2Divisor(128), 128);
  EXPECT_EQ(LargestPow2Divisor(192), 64);
  EXPECT_EQ(LargestPow2Divisor(576), 64);
  // llama.cpp (notes §3): K = largest power of two dividing head_dim, V = 64, only if head_dim % 64 == 0.
  const struct {
    int head_dim, k, v;
  } cases[] = {{64, 64, 64}, {128, 128, 64}, {192, 64, 64}, {256, 256, 64}, {576, 64, 64}, {80, 0, 0}, {96, 0, 0}};
  for (const auto& c : cases) {
    const RotationBlocks r = LlamaCppRotationBlocks(c.head_dim);
    EXPECT_EQ(r.k, c.k) << c.head_dim;
    EXPECT_EQ(r.v, c.v) << c.head_dim;
  }
}

TEST(KvHadamard, RotationSpreadsOutlierChannels) {
  // Why llama.cpp rotates: int4 (group 32) error on rows with 50× channels, measured in the original
  // basis, without and with a 128-block rotation (quantize H·x, dequantize, rotate back).
  const int64_t rows = 64, n = 128;
  const auto x = OutlierRows(rows, n, 41);
  auto xr = x;
  HadamardRows(xr.data(), rows, n, 128);
  CodecParams p;
  std::vector<uint8_t> buf(Int4Codec().row_bytes(n, p));
  std::vector<float> y(x.size()), yr(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    Int4Codec().quantize(x.data() + r * n, buf.data(), n, p);
    Int4Codec().dequantize(buf.data(), y.data() + r * n, n, p);
    Int4Codec().quantize(xr.data() + r * n, buf.data(), n, p);
    Int4Codec().dequantize(buf.data(), yr.data() + r * n, n, p);
  }
  HadamardRows(yr.data(), rows, n, 128);
  double e = 0, er = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (y[i] - x[i]) * (y[i] - x[i]);
    er += (yr[i] - x[i]) * (yr[i] - x[i]);
  }
  EXPECT_LT(er, 0.5 * e);
}

}  // namespace
}  // namespace kvaudit
