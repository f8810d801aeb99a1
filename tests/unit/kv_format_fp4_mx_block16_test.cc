// SGLang fp4_mx_block16 rows: bytes equal to SGLang's quantizer transcribed from its source
// (FP4MXBlock16KVQuantizeUtil.batched_quantize, kvfp4_tensor.py@0dae407b, in f32 as torch.compile
// runs it) on fixed rows with zeros, subnormals, outliers and rounding ties; hand-computed blocks
// (where it differs from OCP MXFP4 and from RNE); NaN/inf blocks; layout; error band. The SIMD
// twins: kv_codec_kernels_test (every format).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kv/formats/fp4_mx_block16.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::ExpectBitsMatchLayout;

bool AllFinite(const std::vector<float>& x) {
  for (float v : x) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// batched_quantize, one token's row: blocks of 16; scale_exp = ceil(log2(clamp(amax / 6, 1e-10)));
// byte = scale_exp + 127; scaled = x / 2^scale_exp; sign = scaled < 0; magnitude = the count of
// thresholds |scaled| >= {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}; packed low nibble = even element.
std::vector<uint8_t> SglangQuantize(const std::vector<float>& x) {
  static const float kThresholds[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::vector<uint8_t> out;
  for (size_t b = 0; b < x.size(); b += 16) {
    float amax = 0;
    for (int i = 0; i < 16; ++i) amax = std::fmax(amax, std::fabs(x[b + i]));
    const float e = std::ceil(std::log2(std::fmax(amax / 6.0f, 1e-10f)));
    out.push_back(static_cast<uint8_t>(e + 127));
    uint8_t code[16];
    for (int i = 0; i < 16; ++i) {
      const float s = x[b + i] / std::exp2(e);
      int m = 0;
      for (float t : kThresholds) m += std::fabs(s) >= t;
      code[i] = static_cast<uint8_t>((s < 0 ? 8 : 0) + m);
    }
    for (int i = 0; i < 16; i += 2) out.push_back(static_cast<uint8_t>(code[i] | (code[i + 1] << 4)));
  }
  return out;
}

std::vector<uint8_t> Quantize(const std::vector<float>& x) { return codec_checks::QuantizeRow(Fp4MxBlock16Codec(), x); }

TEST(KvFormatFp4MxBlock16, BytesEqualSglangQuantizer) {
  for (int64_t n : {16, 64, 128}) {
    for (const std::vector<float>& x : codec_checks::EdgeCaseRows(n)) {
      if (!AllFinite(x)) continue;  // SGLang's byte for a NaN/inf block is undefined: below
      EXPECT_EQ(Quantize(x), SglangQuantize(x)) << "n=" << n << " x[0]=" << x[0];
    }
  }
}

TEST(KvFormatFp4MxBlock16, HandComputedBlocks) {
  // amax 7: e = ceil(log2(7/6)) = 1 (byte 128; OCP MXFP4 would take floor(log2 7) - 2 = 0 and clip
  // 7 to 6). 7/2 = 3.5 -> 6 (4, ties up: RNE also gives 4); 2.5/2 = 1.25 -> 3 (1.5; RNE: 1);
  // 0.5/2 = 0.25 -> 1 (0.5; RNE: 0); 10/2 would not occur. -0.2/2 -> code 8 (-0); -0.0 -> code 0.
  std::vector<float> x(16, 0.0f);
  x[0] = 7, x[1] = 2.5f, x[2] = 0.5f, x[3] = -0.2f, x[4] = -0.0f, x[5] = -7;
  EXPECT_EQ(Quantize(x), (std::vector<uint8_t>{128, 0x36, 0x81, 0xE0, 0x00, 0x00, 0x00, 0x00, 0x00}));
  std::vector<float> y(16);
  Fp4MxBlock16Codec().dequantize(Quantize(x).data(), y.data(), 16, {});
  EXPECT_EQ(y[0], 8.0f);
  EXPECT_EQ(y[1], 3.0f);
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_TRUE(y[3] == 0.0f && std::signbit(y[3]));
  EXPECT_EQ(y[5], -8.0f);
  // An all-zero block: e = ceil(log2(1e-10)) = -33, byte 94, codes 0.
  EXPECT_EQ(Quantize(std::vector<float>(16, 0.0f)), (std::vector<uint8_t>{94, 0, 0, 0, 0, 0, 0, 0, 0}));
  // amax/6 exactly a power of two (amax 12: e = 1) keeps the maximum at 6; one ulp above it takes
  // the next exponent (the exact ceil(log2)).
  std::vector<float> p2(16, 0.0f);
  p2[0] = 12.0f;
  EXPECT_EQ(Quantize(p2)[0], 128);
  EXPECT_EQ(Quantize(p2)[1], 0x07);
  p2[0] = std::nextafter(12.0f, 100.0f);
  EXPECT_EQ(Quantize(p2)[0], 129);
}

TEST(KvFormatFp4MxBlock16, NonFiniteBlocksAreZeroCodes) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> x(32, 1.0f);
    x[3] = bad;
    const std::vector<uint8_t> q = Quantize(x);
    EXPECT_EQ(std::vector<uint8_t>(q.begin(), q.begin() + 9), std::vector<uint8_t>(9, 0)) << bad;
    EXPECT_EQ(std::vector<uint8_t>(q.begin() + 9, q.end()), Quantize(std::vector<float>(16, 1.0f))) << bad;
    std::vector<float> y(32);
    Fp4MxBlock16Codec().dequantize(q.data(), y.data(), 32, {});
    for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], 0.0f);
  }
}

TEST(KvFormatFp4MxBlock16, Layout) { ExpectBitsMatchLayout(Fp4MxBlock16Codec(), {}, 128, 4.5); }

// Relative RMS round-trip error, 256 rows of 128 (Gaussian / 4 channels ×50), measured (g++ 12):
// 0.112 / 0.117. Bands ≈ 1.3× measured; lower bounds band / 2.
TEST(KvFormatFp4MxBlock16, RoundTripErrorBand) {
  const double g = codec_checks::RelRmsError(Fp4MxBlock16Codec(), {}, codec_checks::GaussianRows(256, 128, 1), 128);
  const double o = codec_checks::RelRmsError(Fp4MxBlock16Codec(), {}, codec_checks::OutlierRows(256, 128, 2), 128);
  EXPECT_LE(g, 0.145);
  EXPECT_GE(g, 0.145 / 2);
  EXPECT_LE(o, 0.152);
  EXPECT_GE(o, 0.152 / 2);
}

}  // namespace
}  // namespace kvaudit
