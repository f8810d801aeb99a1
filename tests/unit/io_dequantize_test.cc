// Each block format is checked against an element-wise description of its layout written
// independently of the row loops in quant/dequantize.cc (ggml-common.h block structs; ggml-quants.c
// dequantize_row_*). Scales are powers of two so every expected value is exact whatever the
// compiler does with a*b-c (FMA contraction), and the comparisons are ==.
#include "io/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

using Bytes = std::vector<uint8_t>;

void PutF16(uint8_t* p, float v) {
  const uint16_t h = F32ToF16(v);
  std::memcpy(p, &h, 2);
}

Bytes RandomBlocks(DType t, int n_blocks, uint32_t seed) {
  return testing::RandomBytes(static_cast<int64_t>(GetDTypeInfo(t).block_bytes) * n_blocks, seed);
}

std::vector<float> Dequant(DType t, const Bytes& b, int n_blocks) {
  std::vector<float> y(static_cast<size_t>(GetDTypeInfo(t).block_elems) * n_blocks, NAN);
  DequantizeRow(t, b.data(), y.data(), static_cast<int64_t>(y.size()));
  return y;
}

int Nibble(uint8_t byte, bool high) { return high ? byte >> 4 : byte & 0x0F; }

TEST(IoDequantize, Q8_0) {
  Bytes b = RandomBlocks(DType::kQ8_0, 2, 1);
  PutF16(&b[0], 0.125f);
  PutF16(&b[34], -4.0f);
  const auto y = Dequant(DType::kQ8_0, b, 2);
  for (int e = 0; e < 64; ++e) {
    const uint8_t* blk = &b[34 * (e / 32)];
    const float d = e < 32 ? 0.125f : -4.0f;
    EXPECT_EQ(y[e], static_cast<int8_t>(blk[2 + e % 32]) * d) << e;
  }
}

TEST(IoDequantize, Q4_0) {
  Bytes b = RandomBlocks(DType::kQ4_0, 2, 2);
  PutF16(&b[0], 0.5f);
  PutF16(&b[18], 2.0f);
  const auto y = Dequant(DType::kQ4_0, b, 2);
  for (int e = 0; e < 64; ++e) {
    const uint8_t* blk = &b[18 * (e / 32)];
    const int i = e % 32;  // elements 0..15 are low nibbles of qs[0..15], 16..31 the high ones
    const float d = e < 32 ? 0.5f : 2.0f;
    EXPECT_EQ(y[e], (Nibble(blk[2 + i % 16], i >= 16) - 8) * d) << e;
  }
}

TEST(IoDequantize, Q4_1) {
  Bytes b = RandomBlocks(DType::kQ4_1, 1, 3);
  PutF16(&b[0], 0.25f);
  PutF16(&b[2], -1.5f);
  const auto y = Dequant(DType::kQ4_1, b, 1);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], Nibble(b[4 + i % 16], i >= 16) * 0.25f - 1.5f) << i;
}

TEST(IoDequantize, Q5_0) {
  Bytes b = RandomBlocks(DType::kQ5_0, 1, 4);
  PutF16(&b[0], 0.0625f);
  uint32_t qh;
  std::memcpy(&qh, &b[2], 4);
  const auto y = Dequant(DType::kQ5_0, b, 1);
  for (int i = 0; i < 32; ++i) {  // bit i of qh is the fifth bit of element i
    const int q = Nibble(b[6 + i % 16], i >= 16) | (((qh >> i) & 1) << 4);
    EXPECT_EQ(y[i], (q - 16) * 0.0625f) << i;
  }
}

TEST(IoDequantize, Q5_1) {
  Bytes b = RandomBlocks(DType::kQ5_1, 1, 5);
  PutF16(&b[0], 0.5f);
  PutF16(&b[2], 3.0f);
  uint32_t qh;
  std::memcpy(&qh, &b[4], 4);
  const auto y = Dequant(DType::kQ5_1, b, 1);
  for (int i = 0; i < 32; ++i) {
    const int q = Nibble(b[8 + i % 16], i >= 16) | (((qh >> i) & 1) << 4);
    EXPECT_EQ(y[i], q * 0.5f + 3.0f) << i;
  }
}

// Packs eight 6-bit (scale, min) pairs the way ggml's quantize_row_q4_K_ref does.
void PackScalesK4(const int sc[8], const int mn[8], uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
  }
}

TEST(IoDequantize, Q4_K) {
  Bytes b = RandomBlocks(DType::kQ4_K, 1, 6);
  testing::Rng rng(60);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<int>(rng.Below(64));
    mn[j] = static_cast<int>(rng.Below(64));
  }
  sc[7] = 63;
  mn[5] = 48;  // make sure the top bits of the packed pairs are exercised
  const float d = 0.03125f, dmin = 0.25f;
  PutF16(&b[0], d);
  PutF16(&b[2], dmin);
  PackScalesK4(sc, mn, &b[4]);
  const auto y = Dequant(DType::kQ4_K, b, 1);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, w = e % 64, sub = 2 * c + w / 32;
    const int q = Nibble(b[16 + 32 * c + w % 32], w >= 32);
    EXPECT_EQ(y[e], d * sc[sub] * q - dmin * mn[sub]) << e;
  }
}

TEST(IoDequantize, Q5_K) {
  Bytes b = RandomBlocks(DType::kQ5_K, 2, 7);
  testing::Rng rng(70);
  for (int blk = 0; blk < 2; ++blk) {
    uint8_t* p = &b[176 * blk];
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<int>(rng.Below(64));
      mn[j] = static_cast<int>(rng.Below(64));
    }
    PutF16(p, blk ? 0.5f : 0.0078125f);
    PutF16(p + 2, blk ? 1.0f : 0.125f);
    PackScalesK4(sc, mn, p + 4);
    const auto y = Dequant(DType::kQ5_K, Bytes(p, p + 176), 1);
    for (int e = 0; e < 256; ++e) {
      const int c = e / 64, w = e % 64, sub = 2 * c + w / 32, l = w % 32;
      const int q = Nibble(p[48 + 32 * c + l], w >= 32) + 16 * ((p[16 + l] >> sub) & 1);
      EXPECT_EQ(y[e], F16ToF32(F32ToF16(blk ? 0.5f : 0.0078125f)) * sc[sub] * q - (blk ? 1.0f : 0.125f) * mn[sub]) << e;
    }
  }
  EXPECT_EQ(Dequant(DType::kQ5_K, b, 2).size(), 512u);
}

TEST(IoDequantize, Q6_K) {
  Bytes b = RandomBlocks(DType::kQ6_K, 1, 8);
  const float d = 0.0625f;
  PutF16(&b[208], d);  // d is the last field of block_q6_K
  const auto y = Dequant(DType::kQ6_K, b, 1);
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, k = (e % 128) / 32, l = e % 32;
    const int lo = Nibble(b[64 * n + l + 32 * (k & 1)], k >= 2);
    const int hi = (b[128 + 32 * n + l] >> (2 * k)) & 3;
    const int sc = static_cast<int8_t>(b[192 + 8 * n + l / 16 + 2 * k]);
    EXPECT_EQ(y[e], d * sc * ((lo | (hi << 4)) - 32)) << e;
  }
}

TEST(IoDequantize, Q2_K) {
  Bytes b = RandomBlocks(DType::kQ2_K, 2, 10);
  const float d[2] = {0.0625f, 2.0f}, dmin[2] = {0.5f, 0.015625f};
  for (int blk = 0; blk < 2; ++blk) {
    PutF16(&b[84 * blk + 80], d[blk]);  // block_q2_K ends with d, dmin
    PutF16(&b[84 * blk + 82], dmin[blk]);
  }
  const auto y = Dequant(DType::kQ2_K, b, 2);
  for (int g = 0; g < 512; ++g) {
    const int blk = g / 256, e = g % 256;
    const uint8_t* p = &b[84 * blk];
    // element 32j + l of half h is bits 2j..2j+1 of qs[32h + l]; scales[e/16] = scale | min << 4
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    const int q = (p[16 + 32 * h + l] >> (2 * j)) & 3;
    const int sc = p[e / 16] & 0x0F, mn = p[e / 16] >> 4;
    EXPECT_EQ(y[g], d[blk] * sc * q - dmin[blk] * mn) << g;
  }
}

TEST(IoDequantize, Q3_K) {
  Bytes b = RandomBlocks(DType::kQ3_K, 1, 11);
  testing::Rng rng(110);
  int ls[16];  // the sixteen 6-bit scales, biased by 32, packed as quantize_row_q3_K_ref does
  for (int k = 0; k < 16; ++k) ls[k] = static_cast<int>(rng.Below(64));
  ls[3] = 0;
  ls[13] = 63;  // the extremes, and the top bits of the last packed byte
  uint8_t* scales = &b[96];
  std::memset(scales, 0, 12);
  for (int k = 0; k < 16; ++k) {
    if (k < 8)
      scales[k] = static_cast<uint8_t>(ls[k] & 0x0F);
    else
      scales[k - 8] |= static_cast<uint8_t>((ls[k] & 0x0F) << 4);
    scales[8 + k % 4] |= static_cast<uint8_t>((ls[k] >> 4) << (2 * (k / 4)));
  }
  const float d = 0.125f;
  PutF16(&b[108], d);
  const auto y = Dequant(DType::kQ3_K, b, 1);
  for (int e = 0; e < 256; ++e) {
    // low 2 bits as q2_K's; bit 4h + j of hmask[l] is the third bit, and a clear one means -4
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = (b[32 + 32 * h + l] >> (2 * j)) & 3;
    const int high = (b[l] >> (4 * h + j)) & 1;
    EXPECT_EQ(y[e], d * (ls[e / 16] - 32) * (low + 4 * high - 4)) << e;
  }
}

// kvalues_iq4nl (ggml-common.h).
constexpr int kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(IoDequantize, IQ4_NL) {
  Bytes b = RandomBlocks(DType::kIQ4_NL, 2, 12);
  PutF16(&b[0], 0.25f);
  PutF16(&b[18], -0.0078125f);
  const auto y = Dequant(DType::kIQ4_NL, b, 2);
  for (int e = 0; e < 64; ++e) {
    const uint8_t* blk = &b[18 * (e / 32)];
    const int i = e % 32;  // q4_0's nibble order: elements 16..31 are the high nibbles
    const float d = e < 32 ? 0.25f : -0.0078125f;
    EXPECT_EQ(y[e], d * kIq4Levels[Nibble(blk[2 + i % 16], i >= 16)]) << e;
  }
}

TEST(IoDequantize, IQ4_XS) {
  Bytes b = RandomBlocks(DType::kIQ4_XS, 1, 13);
  testing::Rng rng(130);
  int ls[8];  // eight 6-bit sub-block scales, biased by 32
  for (int k = 0; k < 8; ++k) ls[k] = static_cast<int>(rng.Below(64));
  ls[0] = 63;
  ls[6] = 0;
  uint16_t scales_h = 0;
  for (int k = 0; k < 8; ++k) scales_h = static_cast<uint16_t>(scales_h | ((ls[k] >> 4) << (2 * k)));
  std::memcpy(&b[2], &scales_h, 2);
  for (int k = 0; k < 4; ++k) b[4 + k] = static_cast<uint8_t>((ls[2 * k] & 0x0F) | ((ls[2 * k + 1] & 0x0F) << 4));
  const float d = 0.03125f;
  PutF16(&b[0], d);
  const auto y = Dequant(DType::kIQ4_XS, b, 1);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 32, w = e % 32;  // sub-block k: 16 bytes of qs, iq4_nl's nibble order
    const int q = Nibble(b[8 + 16 * k + w % 16], w >= 16);
    EXPECT_EQ(y[e], d * (ls[k] - 32) * kIq4Levels[q]) << e;
  }
}

TEST(IoDequantize, NonPowerOfTwoScaleMatchesFloatFormula) {
  Bytes b(18, 0x9F);  // low nibble 15, high nibble 9
  PutF16(&b[0], 0.1f);
  const float d = F16ToF32(F32ToF16(0.1f));
  const auto y = Dequant(DType::kQ4_0, b, 1);
  EXPECT_EQ(y[0], 7.0f * d);
  EXPECT_EQ(y[31], 1.0f * d);
}

TEST(IoDequantize, F16Row) {
  const std::vector<uint16_t> h = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0x3555};
  std::vector<float> y(h.size());
  DequantizeRow(DType::kF16, reinterpret_cast<const uint8_t*>(h.data()), y.data(), 7);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 65504.0f);
  EXPECT_EQ(y[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(y[4]) && y[4] == 0.0f);
  EXPECT_TRUE(std::isinf(y[5]));
  EXPECT_EQ(y[6], 0.333251953125f);
}

TEST(IoDequantize, BF16AndF64Rows) {
  const std::vector<uint16_t> h = {0x3F80, 0x4049, 0xBF00};
  std::vector<float> y(3);
  DequantizeRow(DType::kBF16, reinterpret_cast<const uint8_t*>(h.data()), y.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{1.0f, 3.140625f, -0.5f}));
  const std::vector<double> dv = {1.5, -0.25};
  DequantizeRow(DType::kF64, reinterpret_cast<const uint8_t*>(dv.data()), y.data(), 2);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -0.25f);
}

TEST(IoDequantize, UnalignedF32Source) {
  Bytes b(1 + 8);
  const float v[2] = {1.25f, -7.0f};
  std::memcpy(&b[1], v, 8);
  float y[2];
  DequantizeRow(DType::kF32, &b[1], y, 2);
  EXPECT_EQ(y[0], 1.25f);
  EXPECT_EQ(y[1], -7.0f);
}

TEST(IoDequantize, TensorAndRowsHelpers) {
  Bytes b = RandomBlocks(DType::kQ8_0, 4, 9);  // [2 rows, 64 cols]
  for (int i = 0; i < 4; ++i) PutF16(&b[34 * i], 1.0f);
  TensorView t{"w", DType::kQ8_0, {2, 64}, b.data(), b.size()};
  std::vector<float> all(128), row1(64);
  ASSERT_TRUE(DequantizeToF32(t, all.data()).ok());
  ASSERT_TRUE(DequantizeRowsToF32(t, 1, 1, row1.data()).ok());
  EXPECT_EQ(std::vector<float>(all.begin() + 64, all.end()), row1);
  EXPECT_EQ(all[33], static_cast<int8_t>(b[34 + 3]));

  const Status oob = DequantizeRowsToF32(t, 2, 1, row1.data());
  ASSERT_FALSE(oob.ok());
  EXPECT_NE(oob.error().message.find("tensor 'w'"), std::string::npos);

  TensorView bad = t;
  bad.nbytes -= 1;
  const Status mismatch = DequantizeToF32(bad, all.data());
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().exit_code(), 2);
  EXPECT_NE(mismatch.error().message.find("tensor 'w'"), std::string::npos);

  TensorView ints{"ids", DType::kI32, {4}, b.data(), 16};
  const Status not_float = DequantizeToF32(ints, all.data());
  ASSERT_FALSE(not_float.ok());
  EXPECT_NE(not_float.error().message.find("I32"), std::string::npos);
}

}  // namespace
}  // namespace kvaudit
