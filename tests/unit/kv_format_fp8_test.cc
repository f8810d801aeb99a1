// OCP FP8 (e4m3fn, e5m2) codecs: the scalar encoder checked exhaustively against the bit-level
// definition (every code round-trips, midpoints round to even, overflow saturates), an independent
// brute-force nearest-value search, hand-computed rows, dynamic blocks, error bands and SIMD twins.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kv/formats/fp8.h"
#include "support/random_rows.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::ExpectBitsMatchLayout;
using codec_checks::ExpectKernelsAgree;
using codec_checks::GaussianRows;
using codec_checks::OutlierRows;
using codec_checks::RelRmsError;

constexpr Fp8Kind kKinds[] = {Fp8Kind::kE4M3, Fp8Kind::kE5M2};
const char* Name(Fp8Kind k) { return k == Fp8Kind::kE4M3 ? "e4m3" : "e5m2"; }
uint8_t MaxCode(Fp8Kind k) { return k == Fp8Kind::kE4M3 ? 0x7E : 0x7B; }

TEST(KvFormatFp8, DecodesHandPickedCodes) {
  using K = Fp8Kind;
  EXPECT_EQ(Fp8ToF32(0x38, K::kE4M3), 1.0f);                  // 0.0111.000: 2^(7−7)
  EXPECT_EQ(Fp8ToF32(0x7E, K::kE4M3), 448.0f);                // 0.1111.110: 1.75·2^8
  EXPECT_EQ(Fp8ToF32(0x08, K::kE4M3), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(Fp8ToF32(0x01, K::kE4M3), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(Fp8ToF32(0xA2, K::kE4M3), -0.15625f);             // 1.0100.010: −1.25·2^-3
  EXPECT_TRUE(std::isnan(Fp8ToF32(0x7F, K::kE4M3)));
  EXPECT_TRUE(std::isnan(Fp8ToF32(0xFF, K::kE4M3)));
  EXPECT_EQ(Fp8ToF32(0x3C, K::kE5M2), 1.0f);      // 0.01111.00
  EXPECT_EQ(Fp8ToF32(0x7B, K::kE5M2), 57344.0f);  // 0.11110.11: 1.75·2^15
  EXPECT_EQ(Fp8ToF32(0x01, K::kE5M2), std::ldexp(1.0f, -16));
  EXPECT_EQ(Fp8ToF32(0x7C, K::kE5M2), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Fp8ToF32(0xFC, K::kE5M2), -std::numeric_limits<float>::infinity());
  for (uint8_t c : {0x7D, 0x7E, 0x7F, 0xFD}) EXPECT_TRUE(std::isnan(Fp8ToF32(c, K::kE5M2)));
  EXPECT_EQ(std::signbit(Fp8ToF32(0x80, K::kE4M3)), true);  // −0
}

TEST(KvFormatFp8, EveryCodeRoundTrips) {
  for (Fp8Kind k : kKinds) {
    for (int c = 0; c < 256; ++c) {
      const float v = Fp8ToF32(static_cast<uint8_t>(c), k);
      if (std::isnan(v)) {
        EXPECT_EQ(Fp8FromF32(v, k) & 0x7F, 0x7F) << Name(k) << " code " << c;  // NaN stays NaN
      } else if (std::isinf(v)) {
        EXPECT_EQ(Fp8FromF32(v, k), (c & 0x80) | MaxCode(k)) << "SATFINITE: inf -> max";
      } else {
        EXPECT_EQ(Fp8FromF32(v, k), c) << Name(k) << " code " << c;
      }
    }
  }
}

TEST(KvFormatFp8, MidpointsRoundToEven) {
  for (Fp8Kind k : kKinds) {
    for (int c = 0; c < MaxCode(k); ++c) {
      const float lo = Fp8ToF32(static_cast<uint8_t>(c), k), hi = Fp8ToF32(static_cast<uint8_t>(c + 1), k);
      const float mid = 0.5f * (lo + hi);  // exact: fp8 values have ≤ 4 significant bits
      for (int sign : {0, 0x80}) {
        const float s = sign ? -1.0f : 1.0f;
        EXPECT_EQ(Fp8FromF32(s * mid, k), sign | ((c & 1) ? c + 1 : c)) << Name(k) << " " << mid;
        EXPECT_EQ(Fp8FromF32(s * std::nextafter(mid, 0.0f), k), sign | c) << Name(k) << " " << mid;
        EXPECT_EQ(Fp8FromF32(s * std::nextafter(mid, FLT_MAX), k), sign | (c + 1)) << Name(k) << " " << mid;
      }
    }
  }
}

TEST(KvFormatFp8, SaturatesBeyondMax) {
  const float inf = std::numeric_limits<float>::infinity();
  // e4m3: 464 would be the midpoint to the (NaN) pattern 480; everything above 448 clamps to 448.
  for (float v : {448.0f, 449.0f, 464.0f, 480.0f, 1e30f, FLT_MAX, inf}) {
    EXPECT_EQ(Fp8FromF32(v, Fp8Kind::kE4M3), 0x7E) << v;
    EXPECT_EQ(Fp8FromF32(-v, Fp8Kind::kE4M3), 0xFE) << v;
  }
  // e5m2: 61440 is the midpoint to inf (which round-to-nearest without saturation would give).
  for (float v : {57344.0f, 57345.0f, 61440.0f, 70000.0f, FLT_MAX, inf}) {
    EXPECT_EQ(Fp8FromF32(v, Fp8Kind::kE5M2), 0x7B) << v;
    EXPECT_EQ(Fp8FromF32(-v, Fp8Kind::kE5M2), 0xFB) << v;
  }
  EXPECT_EQ(Fp8FromF32(std::numeric_limits<float>::quiet_NaN(), Fp8Kind::kE4M3), 0x7F);
  EXPECT_EQ(Fp8FromF32(std::numeric_limits<float>::quiet_NaN(), Fp8Kind::kE5M2), 0x7F);
  EXPECT_EQ(Fp8FromF32(std::ldexp(1.0f, -11), Fp8Kind::kE4M3), 0x00);   // < half the smallest subnormal
  EXPECT_EQ(Fp8FromF32(-std::ldexp(1.0f, -10), Fp8Kind::kE4M3), 0x80);  // tie 0 / 2^-9: even (−0)
}

// Independent reference: the nearest finite code by exhaustive search, ties to the even code,
// saturating (the definition of RNE + SATFINITE, with none of the encoder's bit tricks).
uint8_t BruteForce(float x, Fp8Kind k) {
  const float a = std::fabs(x);
  int best = 0;
  for (int c = 1; c <= MaxCode(k); ++c) {
    const float dc = std::fabs(Fp8ToF32(static_cast<uint8_t>(c), k) - a);
    const float db = std::fabs(Fp8ToF32(static_cast<uint8_t>(best), k) - a);
    if (dc < db || (dc == db && (c & 1) == 0)) best = c;
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

TEST(KvFormatFp8, EncoderMatchesBruteForceSearch) {
  testing::Rng rng(42);
  for (Fp8Kind k : kKinds) {
    for (int i = 0; i < 20000; ++i) {
      const int e = static_cast<int>(rng.Below(48)) - 24;  // |x| in [2^-24, 2^24): subnormals to overflow
      const float mant = 1.0f + rng.Uniform();
      const float x = (rng.Below(2) ? -1.0f : 1.0f) * std::ldexp(mant, e);
      ASSERT_EQ(Fp8FromF32(x, k), BruteForce(x, k)) << Name(k) << " " << x;
    }
  }
}

std::vector<uint8_t> Quantize(const RowCodec& c, const std::vector<float>& x, const CodecParams& p) {
  std::vector<uint8_t> buf(c.row_bytes(static_cast<int64_t>(x.size()), p));
  c.quantize(x.data(), buf.data(), static_cast<int64_t>(x.size()), p);
  return buf;
}

TEST(KvFormatFp8, HandComputedRows) {
  CodecParams p;
  p.scale = 2.0f;  // stored as fp8(x / 2)
  // 896/2 = 448 -> 0x7E; 1/2 -> 0x30; −0.3/2 = −1.2·2^-3, mantissa 1.6 -> 2: 0xA2; 1000/2 saturates;
  // 2^-11/2 = 2^-12 is below half the smallest subnormal (2^-10): +0.
  const std::vector<float> x = {896.0f, 1.0f, -0.3f, 1000.0f, 0.0f, -0.0f, std::ldexp(1.0f, -11)};
  EXPECT_EQ(Quantize(Fp8E4M3Codec(), x, p), (std::vector<uint8_t>{0x7E, 0x30, 0xA2, 0x7E, 0x00, 0x80, 0x00}));
  // e5m2: 448 = 1.75·2^8 -> 0.10111.11 = 0x5F; 0.5 -> 0x38; −0.15 = −1.2·2^-3, mantissa 0.8 -> 1: 0xB1;
  // 500 = 1.953·2^8 rounds up to 2^9: 0x60; 2^-12 is normal in e5m2 (field 3): 0.00011.00 = 0x0C.
  EXPECT_EQ(Quantize(Fp8E5M2Codec(), x, p), (std::vector<uint8_t>{0x5F, 0x38, 0xB1, 0x60, 0x00, 0x80, 0x0C}));
  std::vector<float> y(x.size());
  Fp8E4M3Codec().dequantize(Quantize(Fp8E4M3Codec(), x, p).data(), y.data(), 7, p);
  EXPECT_EQ(y[0], 896.0f);
  EXPECT_EQ(y[2], -0.3125f);  // −0.15625 · 2
}

TEST(KvFormatFp8, DynamicBlocks) {
  // Block 0: x_i = (i − 16)/2, amax 8: scale 8/448 stored as f32, codes of x/scale = 56·x.
  // Block 1: all zeros: scale 0, codes 0, exact.
  std::vector<float> x(64, 0.0f);
  for (int i = 0; i < 32; ++i) x[i] = 0.5f * static_cast<float>(i - 16);
  const auto buf = Quantize(Fp8E4M3DynamicCodec(), x, {});
  ASSERT_EQ(buf.size(), 72u);
  float s0, s1;
  std::memcpy(&s0, buf.data(), 4);
  std::memcpy(&s1, buf.data() + 36, 4);
  EXPECT_EQ(s0, 8.0f / 448.0f);
  EXPECT_EQ(s1, 0.0f);
  EXPECT_EQ(buf[4 + 0], 0xFE);   // −8 -> −448
  EXPECT_EQ(buf[4 + 16], 0x00);  // 0
  EXPECT_EQ(buf[4 + 17], 0x5E);  // 0.5 -> 28 = 1.75·2^4: 0.1011.110
  EXPECT_EQ(buf[4 + 31], 0x7D);  // 7.5 -> 420 = 1.640625·2^8 -> mantissa 5.125 -> 5: 0.1111.101 (416)
  for (int i = 36 + 4; i < 72; ++i) EXPECT_EQ(buf[i], 0) << i;
  std::vector<float> y(64);
  Fp8E4M3DynamicCodec().dequantize(buf.data(), y.data(), 64, {});
  EXPECT_EQ(y[0], -8.0f);
  for (int i = 32; i < 64; ++i) EXPECT_EQ(y[i], 0.0f);
}

TEST(KvFormatFp8, CalibScale) {
  EXPECT_EQ(Fp8CalibScale(448.0f, Fp8Kind::kE4M3), 1.0f);
  EXPECT_EQ(Fp8CalibScale(57344.0f, Fp8Kind::kE5M2), 1.0f);
  EXPECT_EQ(Fp8CalibScale(896.0f, Fp8Kind::kE4M3), 2.0f);
  EXPECT_EQ(Fp8CalibScale(0.0f, Fp8Kind::kE4M3), FLT_EPSILON);  // compressed-tensors: zero -> eps
  EXPECT_EQ(Fp8MaxFinite(Fp8Kind::kE4M3), 448.0f);
  EXPECT_EQ(Fp8MaxFinite(Fp8Kind::kE5M2), 57344.0f);
}

TEST(KvFormatFp8, BitsPerElementMatchLayout) {
  ExpectBitsMatchLayout(Fp8E4M3Codec(), {}, 128, 8.0);
  ExpectBitsMatchLayout(Fp8E5M2Codec(), {}, 128, 8.0);
  ExpectBitsMatchLayout(Fp8E4M3DynamicCodec(), {}, 128, 9.0);  // 32 codes + f32 scale per 32
  ExpectBitsMatchLayout(Fp8E5M2DynamicCodec(), {}, 128, 9.0);
}

float Amax(const std::vector<float>& x) {
  float a = 0;
  for (float v : x) a = std::fmax(a, std::fabs(v));
  return a;
}

// Relative RMS round-trip error, 256 rows of 128 (Gaussian / 4 channels ×50), measured (g++ 12):
//   e4m3 unit 0.0266 / 0.0255, calib (amax/448 over the data) 0.0265 / 0.0264, dynamic 0.0239 / 0.0030
//   e5m2 unit 0.0533 / 0.0544, calib 0.0528 / 0.0526, dynamic 0.0478 / 0.0060
// (dynamic on outlier rows: the relative error is dominated by the 50× channels, which set their
// blocks' amax and land near ±max). Bands ≈ 1.3× measured; lower bounds band / 2.
TEST(KvFormatFp8, RoundTripErrorBands) {
  const auto g = GaussianRows(256, 128, 1), o = OutlierRows(256, 128, 2);
  CodecParams unit, cg4, co4, cg5, co5;
  cg4.scale = Fp8CalibScale(Amax(g), Fp8Kind::kE4M3);
  co4.scale = Fp8CalibScale(Amax(o), Fp8Kind::kE4M3);
  cg5.scale = Fp8CalibScale(Amax(g), Fp8Kind::kE5M2);
  co5.scale = Fp8CalibScale(Amax(o), Fp8Kind::kE5M2);
  struct Case {
    const char* what;
    const RowCodec& c;
    CodecParams p;
    const std::vector<float>& x;
    double band;
  };
  const Case cases[] = {
      {"e4m3 unit gauss", Fp8E4M3Codec(), unit, g, 0.035},
      {"e4m3 unit outl", Fp8E4M3Codec(), unit, o, 0.033},
      {"e4m3 calib gauss", Fp8E4M3Codec(), cg4, g, 0.034},
      {"e4m3 calib outl", Fp8E4M3Codec(), co4, o, 0.034},
      {"e4m3 dyn gauss", Fp8E4M3DynamicCodec(), unit, g, 0.031},
      {"e4m3 dyn outl", Fp8E4M3DynamicCodec(), unit, o, 0.0039},
      {"e5m2 unit gauss", Fp8E5M2Codec(), unit, g, 0.069},
      {"e5m2 unit outl", Fp8E5M2Codec(), unit, o, 0.071},
      {"e5m2 calib gauss", Fp8E5M2Codec(), cg5, g, 0.069},
      {"e5m2 calib outl", Fp8E5M2Codec(), co5, o, 0.068},
      {"e5m2 dyn gauss", Fp8E5M2DynamicCodec(), unit, g, 0.062},
      {"e5m2 dyn outl", Fp8E5M2DynamicCodec(), unit, o, 0.0078},
  };
  for (const Case& k : cases) {
    const double e = RelRmsError(k.c, k.p, k.x, 128);
    EXPECT_LE(e, k.band) << k.what;
    EXPECT_GE(e, k.band / 2) << k.what;
  }
}

TEST(KvFormatFp8, SimdDecodesEveryCode) {
  // A row holding all 256 codes through each kernel path's axpy (w = 1, acc = 0) equals the
  // scalar decode (NaN codes included: the vector decoders blend them back).
  std::vector<uint8_t> row(256);
  for (int c = 0; c < 256; ++c) row[c] = static_cast<uint8_t>(c);
  CodecParams p;
  p.scale = 0.5f;
  codec_checks::ForEachPath([&] {
    for (const RowCodec* c : {&Fp8E4M3Codec(), &Fp8E5M2Codec()}) {
      const Fp8Kind k = c == &Fp8E4M3Codec() ? Fp8Kind::kE4M3 : Fp8Kind::kE5M2;
      std::vector<float> acc(256, 0.0f);
      c->axpy(row.data(), 1.0f, acc.data(), 256, p);
      for (int i = 0; i < 256; ++i) {
        const float want = Fp8ToF32(static_cast<uint8_t>(i), k) * 0.5f;
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(acc[i])) << Name(k) << " " << i;
        } else {
          EXPECT_EQ(acc[i], want) << Name(k) << " " << i;
        }
      }
    }
  });
}

TEST(KvFormatFp8, SimdMatchesScalarAndDequantize) {
  CodecParams p;
  p.scale = 0.75f;
  codec_checks::ForEachPath([&] {
    for (int64_t n : {1, 16, 40, 64, 128, 200}) {
      const auto x = GaussianRows(8, n, 100 + n);
      ExpectKernelsAgree(Fp8E4M3Codec(), Fp8E4M3CodecRef(), p, x, n, 200 + n);
      ExpectKernelsAgree(Fp8E5M2Codec(), Fp8E5M2CodecRef(), p, x, n, 300 + n);
    }
    for (int64_t n : {32, 64, 128, 256}) {
      const auto x = OutlierRows(8, n, 400 + n);
      ExpectKernelsAgree(Fp8E4M3DynamicCodec(), Fp8E4M3DynamicCodecRef(), {}, x, n, 500 + n);
      ExpectKernelsAgree(Fp8E5M2DynamicCodec(), Fp8E5M2DynamicCodecRef(), {}, x, n, 600 + n);
    }
  });
}

}  // namespace
}  // namespace kvaudit
