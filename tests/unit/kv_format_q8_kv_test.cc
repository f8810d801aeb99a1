// ik_llama.cpp q8_KV rows: bytes equal to ik_llama.cpp's quantizer transcribed from its source
// (iqk_quantize_row_q8_KV @8337e4cd) on fixed rows with zeros, subnormals, outliers, NaN and inf;
// hand-computed bytes; layout; error band. The SIMD twins: kv_codec_kernels_test (every format).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kv/formats/q8_kv.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

using codec_checks::ExpectBitsMatchLayout;

// ggml's nearest_int (ggml-quants.c): the 1.5·2^23 magic-number rounding, half to even.
int NearestInt(float fval) {
  const float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

// iqk_quantize_row_q8_KV as written: amax with std::max (a NaN never wins), d = amax/127 stored,
// id = 1/d, q = round(id·x), the sum of q after the codes. For NaN and ±inf (a subnormal d makes id
// inf) the x86 path's result: _mm256_cvtps_epi32 gives INT_MIN and the saturating packs -128.
std::vector<uint8_t> IkQuantizeRowQ8Kv(const std::vector<float>& x) {
  const int n = static_cast<int>(x.size());
  std::vector<uint8_t> out(8 + n, 0);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::abs(v));
  if (!amax) return out;  // d = 0, s = 0, q = 0
  const float d = amax / 127.f, id = 1.f / d;
  int sum = 0;
  for (int j = 0; j < n; ++j) {
    const float v = id * x[j];
    const int q = std::isfinite(v) ? NearestInt(v) : -128;
    out[8 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    sum += q;
  }
  std::memcpy(out.data(), &d, 4);
  std::memcpy(out.data() + 4, &sum, 4);
  return out;
}

std::vector<uint8_t> Quantize(const std::vector<float>& x) { return codec_checks::QuantizeRow(Q8KvCodec(), x); }

TEST(KvFormatQ8Kv, BytesEqualIkLlamaCppQuantizer) {
  for (int64_t n : {32, 64, 128}) {
    for (const std::vector<float>& x : codec_checks::EdgeCaseRows(n)) {
      EXPECT_EQ(Quantize(x), IkQuantizeRowQ8Kv(x)) << "n=" << n << " x[0]=" << x[0];
    }
  }
}

TEST(KvFormatQ8Kv, HandComputedBytes) {
  // amax 127: d = 1 (0x3F800000), id = 1; -63.5 -> -64 and 0.5 -> 0 (half to even), 1.5 -> 2;
  // s = 127 - 64 + 2 = 65.
  std::vector<float> x(32, 0.0f);
  x[0] = 127, x[1] = -63.5f, x[2] = 0.5f, x[3] = 1.5f;
  std::vector<uint8_t> want(40, 0);
  const uint8_t head[12] = {0x00, 0x00, 0x80, 0x3F, 65, 0, 0, 0, 0x7F, 0xC0, 0x00, 0x02};
  std::copy(head, head + 12, want.begin());
  EXPECT_EQ(Quantize(x), want);
  // An infinite amax: d = inf, id = 0, 0·inf = NaN for the infinite element (-128), 0 elsewhere.
  std::vector<float> inf(32, 1.0f);
  inf[4] = INFINITY;
  const std::vector<uint8_t> got = Quantize(inf);
  float d;
  std::memcpy(&d, got.data(), 4);
  EXPECT_TRUE(std::isinf(d));
  EXPECT_EQ(got[8 + 4], 0x80);
  EXPECT_EQ(got[8], 0);
}

TEST(KvFormatQ8Kv, LayoutAndDequantize) {
  ExpectBitsMatchLayout(Q8KvCodec(), {}, 128, 8.5);  // 128 codes + f32 d + int32 s
  ExpectBitsMatchLayout(Q8KvCodec(), {}, 64, 9.0);
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i - 32) * 0.25f;
  const std::vector<uint8_t> q = Quantize(x);
  std::vector<float> y(64);
  Q8KvCodec().dequantize(q.data(), y.data(), 64, {});
  float d;
  std::memcpy(&d, q.data(), 4);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], d * static_cast<float>(static_cast<int8_t>(q[8 + i])));
}

// Relative RMS round-trip error, 256 rows of 128 (Gaussian / 4 channels ×50), measured (g++ 12):
// 0.00638 / 0.0199 (one scale per row: the outlier channels set it for every element). Bands ≈ 1.3×
// measured; lower bounds band / 2.
TEST(KvFormatQ8Kv, RoundTripErrorBand) {
  const double g = codec_checks::RelRmsError(Q8KvCodec(), {}, codec_checks::GaussianRows(256, 128, 1), 128);
  const double o = codec_checks::RelRmsError(Q8KvCodec(), {}, codec_checks::OutlierRows(256, 128, 2), 128);
  EXPECT_LE(g, 0.0083);
  EXPECT_GE(g, 0.0083 / 2);
  EXPECT_LE(o, 0.0259);
  EXPECT_GE(o, 0.0259 / 2);
}

}  // namespace
}  // namespace kvaudit
