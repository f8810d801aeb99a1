// vLLM per-token-head rows (int8_per_token_head, fp8_per_token_head): bytes equal to vLLM's Triton
// store kernel transcribed from its source (_reshape_cache_per_token_head,
// triton_reshape_and_cache_flash.py@d8eabdbf; its divisions taken as IEEE, kv/formats/
// per_token_head.h) on fixed rows with zeros, subnormals, outliers, NaN and inf; hand-computed rows
// (half away from zero, the 1e-6 scale floor); layout; error bands. The SIMD twins:
// kv_codec_kernels_test (every format).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kv/formats/fp8.h"
#include "kv/formats/per_token_head.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::ExpectBitsMatchLayout;

// The kernel, one (token, head): amax (NaN ignored), scale = max(amax / QUANT_MAX, 1e-6), stored;
// x · (1.0 / scale); int8: ± 0.5 then clamp(-128, 127) then the store's truncation; fp8: clamp
// (-448, 448) then the e4m3 cast (RNE). NaN clamps to the lower bound. kvaudit's row puts the scale
// first.
std::vector<uint8_t> VllmQuantize(const std::vector<float>& x, bool fp8) {
  const float qmax = fp8 ? 448.0f : 127.0f, qmin = fp8 ? -448.0f : -128.0f;
  float amax = 0;
  for (float v : x) amax = std::isnan(v) ? amax : std::fmax(amax, std::fabs(v));
  const float scale = std::fmax(amax / qmax, 1e-6f);
  std::vector<uint8_t> out(4 + x.size());
  std::memcpy(out.data(), &scale, 4);
  for (size_t i = 0; i < x.size(); ++i) {
    float v = x[i] * (1.0f / scale);
    if (!fp8) v = v >= 0 ? v + 0.5f : v - 0.5f;
    v = std::isnan(v) ? qmin : std::fmin(std::fmax(v, qmin), qmax);
    out[4 + i] = fp8 ? Fp8FromF32(v, Fp8Kind::kE4M3) : static_cast<uint8_t>(static_cast<int8_t>(std::trunc(v)));
  }
  return out;
}

std::vector<uint8_t> Quantize(const RowCodec& c, const std::vector<float>& x) {
  return codec_checks::QuantizeRow(c, x);
}

TEST(KvFormatPerTokenHead, BytesEqualVllmTritonKernel) {
  for (int64_t n : {16, 64, 128}) {
    for (const std::vector<float>& x : codec_checks::EdgeCaseRows(n)) {
      EXPECT_EQ(Quantize(Int8PerTokenHeadCodec(), x), VllmQuantize(x, false)) << "int8 n=" << n;
      EXPECT_EQ(Quantize(Fp8PerTokenHeadCodec(), x), VllmQuantize(x, true)) << "fp8 n=" << n;
    }
  }
}

TEST(KvFormatPerTokenHead, HandComputedRows) {
  // amax 127: scale 1.0; 0.5 -> 1 and -0.5 -> -1 (half away from zero, not to even), -63.5 -> -64,
  // 2.5 -> 3.
  const std::vector<float> x = {127, 0.5f, -0.5f, -63.5f, 2.5f, 0, 0, 0};
  EXPECT_EQ(Quantize(Int8PerTokenHeadCodec(), x),
            (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3F, 0x7F, 0x01, 0xFF, 0xC0, 0x03, 0, 0, 0}));
  // A zero row: the scale floor 1e-6 (0x358637BD), codes 0.
  EXPECT_EQ(Quantize(Int8PerTokenHeadCodec(), std::vector<float>(4, 0.0f)),
            (std::vector<uint8_t>{0xBD, 0x37, 0x86, 0x35, 0, 0, 0, 0}));
  // fp8: amax 448 gives scale 1.0 and the e4m3 codes of x: 448 -> 0x7E, 1.0 -> 0x38, -0.15625 -> 0xA2.
  EXPECT_EQ(Quantize(Fp8PerTokenHeadCodec(), {448, 1.0f, -0.15625f, 0}),
            (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3F, 0x7E, 0x38, 0xA2, 0x00}));
}

TEST(KvFormatPerTokenHead, LayoutAndDequantize) {
  ExpectBitsMatchLayout(Int8PerTokenHeadCodec(), {}, 128, 8.25);  // 128 codes + an f32 scale
  ExpectBitsMatchLayout(Fp8PerTokenHeadCodec(), {}, 64, 8.5);
  const std::vector<float> x = codec_checks::GaussianRows(1, 64, 5);
  for (const RowCodec* c : {&Int8PerTokenHeadCodec(), &Fp8PerTokenHeadCodec()}) {
    const std::vector<uint8_t> q = Quantize(*c, x);
    float s;
    std::memcpy(&s, q.data(), 4);
    std::vector<float> y(64);
    c->dequantize(q.data(), y.data(), 64, {});
    for (int i = 0; i < 64; ++i) {
      const float code = c == &Int8PerTokenHeadCodec() ? static_cast<float>(static_cast<int8_t>(q[4 + i]))
                                                       : Fp8ToF32(q[4 + i], Fp8Kind::kE4M3);
      EXPECT_EQ(y[i], code * s) << c->name << " " << i;
    }
  }
}

// Relative RMS round-trip error, 256 rows of 128 (Gaussian / 4 channels ×50), measured (g++ 12):
// int8 0.00638 / 0.0199, fp8 0.0259 / 0.0157. Bands ≈ 1.3× measured; lower bounds band / 2.
TEST(KvFormatPerTokenHead, RoundTripErrorBands) {
  const std::vector<float> g = codec_checks::GaussianRows(256, 128, 1), o = codec_checks::OutlierRows(256, 128, 2);
  struct Case {
    const RowCodec& c;
    const std::vector<float>& x;
    double band;
  };
  const Case cases[] = {{Int8PerTokenHeadCodec(), g, 0.0083},
                        {Int8PerTokenHeadCodec(), o, 0.0259},
                        {Fp8PerTokenHeadCodec(), g, 0.0337},
                        {Fp8PerTokenHeadCodec(), o, 0.0204}};
  for (const Case& k : cases) {
    const double e = codec_checks::RelRmsError(k.c, {}, k.x, 128);
    EXPECT_LE(e, k.band) << k.c.name;
    EXPECT_GE(e, k.band / 2) << k.c.name;
  }
}

}  // namespace
}  // namespace kvaudit
