// int8 / int4 per-token group codecs (HF QuantizedCache/quanto axis-0 semantics): hand-computed
// bytes (ties, all-equal groups, fp16 limits), group validation, layout size, error bands, SIMD twins.
#include <gtest/gtest.h>

#include <vector>

#include "kv/formats/int_group.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::ExpectBitsMatchLayout;
using codec_checks::ExpectKernelsAgree;
using codec_checks::GaussianRows;
using codec_checks::OutlierRows;
using codec_checks::RelRmsError;

std::vector<uint8_t> Quantize(const RowCodec& c, const std::vector<float>& x, int group) {
  CodecParams p;
  p.group = group;
  std::vector<uint8_t> buf(c.row_bytes(static_cast<int64_t>(x.size()), p));
  c.quantize(x.data(), buf.data(), static_cast<int64_t>(x.size()), p);
  return buf;
}

TEST(KvFormatIntGroup, GroupValidity) {
  EXPECT_TRUE(IntGroupValid(128, 32));
  EXPECT_TRUE(IntGroupValid(128, 64));
  EXPECT_TRUE(IntGroupValid(128, 128));
  EXPECT_TRUE(IntGroupValid(96, 6));
  EXPECT_FALSE(IntGroupValid(128, 48));  // does not divide the row
  EXPECT_FALSE(IntGroupValid(64, 128));
  EXPECT_FALSE(IntGroupValid(63, 21));  // odd: int4 pairs would straddle groups
  EXPECT_FALSE(IntGroupValid(128, 0));
  EXPECT_FALSE(IntGroupValid(0, 32));
}

TEST(KvFormatIntGroup, Int4HandComputedBytes) {
  // Group 0: mn 0, scale 15/15 = 1; 0.5 -> 0 and 2.5 -> 2 (half to even), 15 -> 15; element 2j in the
  // low nibble, so codes (2, 15) pack to 0xF2.
  // Group 1: all equal −2: scale 0, min −2 (0xC000), codes 0.
  const std::vector<float> x = {0, 0.5f, 2.5f, 15, -2, -2, -2, -2};
  EXPECT_EQ(Quantize(Int4Codec(), x, 4),
            (std::vector<uint8_t>{0x00, 0x3C, 0x00, 0x00, 0x00, 0xF2,     // f16 1.0, f16 0, codes 0,0 | 2,15
                                  0x00, 0x00, 0x00, 0xC0, 0x00, 0x00}));  // f16 0, f16 −2, codes 0,0 | 0,0
}

TEST(KvFormatIntGroup, Int8HandComputedBytes) {
  // mn −1, scale 2/255 = 0.0078431 -> f16 0x2004 = 0.00784302; (0 + 1)/scale = 127.50 -> 128,
  // (0.5 + 1)/scale = 191.25 -> 191, (1 + 1)/scale = 255.005 -> clamped 255.
  EXPECT_EQ(Quantize(Int8Codec(), {-1, 0, 0.5f, 1}, 4),
            (std::vector<uint8_t>{0x04, 0x20, 0x00, 0xBC, 0, 128, 191, 255}));
  // fp16 limits: scale 131008/255 = 513.76 -> f16 514 (0x6004), min −65504 (0xFBFF).
  EXPECT_EQ(Quantize(Int8Codec(), {-65504.0f, 65504.0f}, 2), (std::vector<uint8_t>{0x04, 0x60, 0xFF, 0xFB, 0, 255}));
  // Zeros: a constant group, exact.
  EXPECT_EQ(Quantize(Int8Codec(), {0, 0}, 2), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0}));
}

TEST(KvFormatIntGroup, AllEqualGroupsReconstructExactly) {
  CodecParams p;
  p.group = 32;
  std::vector<float> x(128);
  for (int i = 0; i < 128; ++i) x[i] = static_cast<float>(i / 32) - 1.5f;  // 4 constant groups
  for (const RowCodec* c : {&Int8Codec(), &Int4Codec()}) {
    std::vector<uint8_t> buf(c->row_bytes(128, p));
    std::vector<float> y(128);
    c->quantize(x.data(), buf.data(), 128, p);
    c->dequantize(buf.data(), y.data(), 128, p);
    EXPECT_EQ(y, x) << c->name;
  }
}

TEST(KvFormatIntGroup, BitsPerElementMatchLayout) {
  CodecParams p;
  for (int g : {32, 64, 128}) {
    p.group = g;
    ExpectBitsMatchLayout(Int8Codec(), p, 128, 8.0 + 32.0 / g);  // + f16 scale + f16 min per group
    ExpectBitsMatchLayout(Int4Codec(), p, 128, 4.0 + 32.0 / g);
  }
}

// Relative RMS round-trip error, 256 rows of 128 (Gaussian / 4 channels ×50), measured (g++ 12):
//   int8 group 32: 0.00464 / 0.00642, group 64: 0.00532 / 0.00983
//   int4 group 32: 0.0792 / 0.118,    group 64: 0.0906 / 0.174
// Bands ≈ 1.3× measured; lower bounds band / 2.
TEST(KvFormatIntGroup, RoundTripErrorBands) {
  const auto g = GaussianRows(256, 128, 1), o = OutlierRows(256, 128, 2);
  struct Case {
    const char* what;
    const RowCodec& c;
    int group;
    const std::vector<float>& x;
    double band;
  };
  const Case cases[] = {
      {"int8 g32 gauss", Int8Codec(), 32, g, 0.0060}, {"int8 g32 outl", Int8Codec(), 32, o, 0.0083},
      {"int8 g64 gauss", Int8Codec(), 64, g, 0.0069}, {"int8 g64 outl", Int8Codec(), 64, o, 0.0128},
      {"int4 g32 gauss", Int4Codec(), 32, g, 0.103},  {"int4 g32 outl", Int4Codec(), 32, o, 0.153},
      {"int4 g64 gauss", Int4Codec(), 64, g, 0.118},  {"int4 g64 outl", Int4Codec(), 64, o, 0.227},
  };
  for (const Case& k : cases) {
    CodecParams p;
    p.group = k.group;
    const double e = RelRmsError(k.c, p, k.x, 128);
    EXPECT_LE(e, k.band) << k.what;
    EXPECT_GE(e, k.band / 2) << k.what;
  }
}

TEST(KvFormatIntGroup, SimdMatchesScalarAndDequantize) {
  // Groups that are multiples of the SIMD step, and ones that leave a scalar remainder (6, 16, 48).
  for (int g : {6, 16, 32, 48, 64, 128}) {
    CodecParams p;
    p.group = g;
    for (int64_t n : {int64_t{g}, int64_t{2 * g}, int64_t{384}}) {
      if (!IntGroupValid(n, g)) continue;
      codec_checks::ForEachPath([&] {
        ExpectKernelsAgree(Int8Codec(), Int8CodecRef(), p, GaussianRows(6, n, 700 + n + g), n, 800 + g);
        ExpectKernelsAgree(Int4Codec(), Int4CodecRef(), p, OutlierRows(6, n, 900 + n + g), n, 1000 + g);
      });
    }
  }
}

}  // namespace
}  // namespace kvaudit
