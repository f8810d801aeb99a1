// f32 / f16 / bf16 row codecs: bit-exact conversions (RNE ties, zeros, fp16 limits), round-trip error
// bands, layout sizes, and the AVX-512 dot/axpy against their scalar twins.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "kv/formats/float_codecs.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::ExpectBitsMatchLayout;
using codec_checks::ExpectKernelsAgree;
using codec_checks::GaussianRows;
using codec_checks::OutlierRows;
using codec_checks::RelRmsError;

std::vector<uint16_t> Encode16(const RowCodec& c, const std::vector<float>& x) {
  std::vector<uint8_t> buf(c.row_bytes(static_cast<int64_t>(x.size()), {}));
  c.quantize(x.data(), buf.data(), static_cast<int64_t>(x.size()), {});
  std::vector<uint16_t> out(x.size());
  std::memcpy(out.data(), buf.data(), buf.size());
  return out;
}

TEST(KvFormatF16, HandComputedBits) {
  const float t = std::ldexp(1.0f, -11);  // half an f16 ulp at 1.0
  const std::vector<float> x = {
      0.0f,
      -0.0f,
      1.0f,
      -2.5f,
      0.1f,                       // 0.1 = 1.6·2^-4: mantissa 614.4 -> 614 = 0x266
      1.0f + t,                   // tie between 0x3C00 and 0x3C01: even 0x3C00
      1.0f + 3 * t,               // tie between 0x3C01 and 0x3C02: even 0x3C02
      65504.0f,                   // largest finite f16
      65519.99f,                  // below the midpoint to 65536: stays 65504
      65520.0f,                   // the midpoint: ties to even = inf (as F16C and ggml)
      -1e6f,                      // overflow -> -inf
      std::ldexp(1.0f, -14),      // smallest normal
      std::ldexp(1.0f, -24),      // smallest subnormal
      std::ldexp(1.0f, -25),      // tie between 0 and 2^-24: even 0
      3 * std::ldexp(1.0f, -25),  // tie between 1 and 2 subnormal ulps: even 2
      std::ldexp(1.0f, -26),      // below half the smallest subnormal: 0
  };
  const std::vector<uint16_t> want = {0x0000, 0x8000, 0x3C00, 0xC100, 0x2E66, 0x3C00, 0x3C02, 0x7BFF,
                                      0x7BFF, 0x7C00, 0xFC00, 0x0400, 0x0001, 0x0000, 0x0002, 0x0000};
  EXPECT_EQ(Encode16(F16Codec(), x), want);
}

TEST(KvFormatBF16, HandComputedBits) {
  const float t = std::ldexp(1.0f, -8);  // half a bf16 ulp at 1.0
  const std::vector<float> x = {0.0f, -0.0f, 1.0f, 1.0f + t, 1.0f + 3 * t, 0.1f, 65504.0f, FLT_MAX, -3.0f};
  // 0.1f = 0x3DCCCCCD -> 0x3DCD; 65504 = 0x477FE000 rounds up to 65536 = 0x4780; FLT_MAX rounds to inf.
  const std::vector<uint16_t> want = {0x0000, 0x8000, 0x3F80, 0x3F80, 0x3F82, 0x3DCD, 0x4780, 0x7F80, 0xC040};
  EXPECT_EQ(Encode16(BF16Codec(), x), want);
}

TEST(KvFormatF32, StoresTheInputBytes) {
  const std::vector<float> x = GaussianRows(1, 40, 7);
  std::vector<uint8_t> buf(F32Codec().row_bytes(40, {}));
  F32Codec().quantize(x.data(), buf.data(), 40, {});
  EXPECT_EQ(std::memcmp(buf.data(), x.data(), 160), 0);
  EXPECT_EQ(RelRmsError(F32Codec(), {}, x, 40), 0.0);
}

TEST(KvFormatF16, BitsPerElementMatchLayout) {
  ExpectBitsMatchLayout(F32Codec(), {}, 128, 32.0);
  ExpectBitsMatchLayout(F16Codec(), {}, 128, 16.0);
  ExpectBitsMatchLayout(BF16Codec(), {}, 128, 16.0);
}

// Relative RMS round-trip error, 256 rows of 128 (Gaussian; and 4 channels ×50). Measured with this
// file's generator (g++ 12, x86-64): f16 2.08e-4 / 2.02e-4, bf16 1.66e-3 / 1.61e-3. Bands ≈ 1.3×
// measured; the lower bounds (band / 2) catch a codec that silently keeps more precision than it claims.
TEST(KvFormatF16, RoundTripErrorBands) {
  const auto gauss = GaussianRows(256, 128, 1), outl = OutlierRows(256, 128, 2);
  struct Case {
    const RowCodec& c;
    const std::vector<float>& x;
    double band;
  };
  const Case cases[] = {{F16Codec(), gauss, 2.7e-4},
                        {F16Codec(), outl, 2.6e-4},
                        {BF16Codec(), gauss, 2.2e-3},
                        {BF16Codec(), outl, 2.1e-3}};
  for (const Case& k : cases) {
    const double e = RelRmsError(k.c, {}, k.x, 128);
    EXPECT_LE(e, k.band) << k.c.name;
    EXPECT_GE(e, k.band / 2) << k.c.name;
  }
}

TEST(KvFormatF16, SimdMatchesScalarAndDequantize) {
  codec_checks::ForEachPath([] {
    for (int64_t n : {1, 16, 40, 64, 128, 200}) {
      const auto x = GaussianRows(8, n, 10 + n);
      ExpectKernelsAgree(F32Codec(), F32CodecRef(), {}, x, n, 20 + n);
      ExpectKernelsAgree(F16Codec(), F16CodecRef(), {}, x, n, 30 + n);
      ExpectKernelsAgree(BF16Codec(), BF16CodecRef(), {}, x, n, 40 + n);
    }
    const auto o = OutlierRows(8, 128, 5);
    ExpectKernelsAgree(F16Codec(), F16CodecRef(), {}, o, 128, 6);
    ExpectKernelsAgree(BF16Codec(), BF16CodecRef(), {}, o, 128, 7);
  });
}

}  // namespace
}  // namespace kvaudit
