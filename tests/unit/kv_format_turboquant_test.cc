// vLLM TurboQuant rows: the Lloyd-Max codebooks against vLLM's solve_lloyd_max run as written
// (centroids.py, CPython on glibc: the hex tables below); bytes of the key and value codecs
// against the store kernels transcribed from triton_turboquant_store.py @0135d081 (_tq_fused_store_mse's
// binary-search bucketize and packing, _store_quantized_value) on fixed rows with zeros,
// subnormals, an outlier, NaN and inf; vLLM's slot sizes (vllm-project/vllm:tests/quantization/test_turboquant.py
// PRESET_EXPECTED); the norm-corrected read; the presets and their end layers. The SIMD paths:
// kv_codec_kernels_test (every format).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "kv/config/cache_config.h"
#include "kv/formats/format_table.h"
#include "kv/formats/turboquant.h"
#include "ops/dot.h"
#include "ops/hadamard.h"
#include "unit/kv_codec_checks.h"

namespace kvaudit {
namespace {

std::vector<uint32_t> Hex(std::span<const float> v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
  return out;
}

// solve_lloyd_max(d, bits) as vLLM's centroids.py writes it, run in CPython 3.11 (glibc libm),
// rounded to f32 as torch.tensor(..., float32) does.
TEST(KvFormatTurboQuant, CodebooksEqualVllmSolver) {
  EXPECT_EQ(Hex(TurboQuantCentroids(128, 3)), (std::vector<uint32_t>{0xbe42a09f, 0xbdf3243d, 0xbd88c955, 0xbcb16317,
                                                                     0x3cb16317, 0x3d88c955, 0x3df3243d, 0x3e42a09f}));
  EXPECT_EQ(Hex(TurboQuantCentroids(128, 4)),
            (std::vector<uint32_t>{0xbe772cc4, 0xbe3b36e7, 0xbe126f17, 0xbde3682b, 0xbdaa99f2, 0xbd6dd0e1, 0xbd0c8559,
                                   0xbc39fbae, 0x3c39fbae, 0x3d0c8559, 0x3d6dd0e1, 0x3daa99f2, 0x3de3682b, 0x3e126f17,
                                   0x3e3b36e7, 0x3e772cc4}));
  EXPECT_EQ(Hex(TurboQuantCentroids(64, 3)), (std::vector<uint32_t>{0xbe899f54, 0xbe2bed53, 0xbdc171fc, 0xbcfadcfb,
                                                                    0x3cfadcfb, 0x3dc171fc, 0x3e2bed53, 0x3e899f54}));
  EXPECT_EQ(Hex(TurboQuantCentroids(64, 4)),
            (std::vector<uint32_t>{0xbeaec76e, 0xbe846170, 0xbe4f16c0, 0xbe20cd0c, 0xbdf1444a, 0xbda82948, 0xbd46b9ff,
                                   0xbc83828a, 0x3c83828a, 0x3d46b9ff, 0x3da82948, 0x3df1444a, 0x3e20cd0c, 0x3e4f16c0,
                                   0x3e846170, 0x3eaec76e}));
  EXPECT_EQ(Hex(TurboQuantCentroids(1024, 3)), (std::vector<uint32_t>{0xbd899f54, 0xbd2bed53, 0xbcc171fc, 0xbbfadcfb,
                                                                      0x3bfadcfb, 0x3cc171fc, 0x3d2bed53, 0x3d899f54}));
  EXPECT_EQ(Hex(TurboQuantCentroids(16, 4)).front(), 0xbf2ec76eu);
  // The store kernel's boundaries: f32 means of neighbouring f32 centroids.
  const auto c = TurboQuantCentroids(128, 4);
  const auto m = TurboQuantMidpoints(128, 4);
  ASSERT_EQ(m.size(), 15u);
  for (size_t i = 0; i < m.size(); ++i) EXPECT_EQ(m[i], (c[i] + c[i + 1]) / 2.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(m[0]), 0xbe5931d6u);  // docs/research/vllm-turboquant.md §2.7
}

// _tq_fused_store_mse's bucketize as written: MSE_BITS halvings of [lo, hi] over the midpoints,
// `y >= mid` moving lo up, then min(lo, N − 1).
int VllmBucket(float y, std::span<const float> mid, int bits) {
  const int n = 1 << bits;
  int lo = 0, hi = n - 1;
  for (int it = 0; it < bits; ++it) {
    const int half = (lo + hi) >> 1;
    const float m = mid[std::min(half, n - 2)];
    if (y >= m) {
      lo = half + 1;
    } else {
      hi = half;
    }
  }
  return std::min(lo, n - 1);
}

// The 4-bit pairs (idx & 0xF) << {0, 4} summed, and the 3-bit 24-bit words Σ idx << 3j split into bytes.
std::vector<uint8_t> VllmPack(const std::vector<int>& idx, int bits) {
  const size_t d = idx.size();
  std::vector<uint8_t> out;
  if (bits == 4) {
    for (size_t j = 0; j < d / 2; ++j)
      out.push_back(static_cast<uint8_t>((idx[2 * j] & 0xF) | ((idx[2 * j + 1] & 0xF) << 4)));
  } else {
    for (size_t g = 0; g < d / 8; ++g) {
      int packed = 0;
      for (int j = 0; j < 8; ++j) packed += (idx[8 * g + j] & 0x7) << (3 * j);
      out.push_back(packed & 0xFF), out.push_back((packed >> 8) & 0xFF), out.push_back((packed >> 16) & 0xFF);
    }
  }
  return out;
}

void PushF16(std::vector<uint8_t>& out, float v) {
  const uint16_t h = F32ToF16(v);
  out.push_back(h & 0xFF), out.push_back(h >> 8);
}

// The key path: turboquant_attn.py's norm and x̂ = k / (norm + 1e-8) (the norm as kvaudit sums it,
// the canonical dot), the rotation x̂ · H/√d (as kvaudit computes it: the butterflies, scaled once),
// then the store kernel.
std::vector<uint8_t> VllmStoreKey(const std::vector<float>& k, int bits) {
  const int d = static_cast<int>(k.size());
  const float norm = std::sqrt(DotCanonicalScalar(k.data(), static_cast<const float*>(k.data()), d));
  std::vector<float> y(k.size());
  for (int i = 0; i < d; ++i) y[i] = k[i] / (norm + 1e-8f);
  HadamardRowsRef(y.data(), 1, d, d);
  std::vector<int> idx(k.size());
  for (int i = 0; i < d; ++i) idx[i] = VllmBucket(y[i], TurboQuantMidpoints(d, bits), bits);
  std::vector<uint8_t> out = VllmPack(idx, bits);
  PushF16(out, norm);
  return out;
}

// _store_quantized_value: min / max, (max − min)/(2^b − 1) floored at 1e-8, the int32 cast of
// (v − min)/scale + 0.5 clamped, fp16 scale and min. NaN: Triton's min/max return the other
// operand (PTX min/max), its int32 cast of NaN is 0.
std::vector<uint8_t> VllmStoreValue(const std::vector<float>& v, int bits) {
  const int qmax = (1 << bits) - 1;
  float vmin = INFINITY, vmax = -INFINITY;
  for (float x : v) vmin = std::fmin(vmin, x), vmax = std::fmax(vmax, x);
  float scale = (vmax - vmin) / static_cast<float>(qmax);
  scale = scale > 1e-8f ? scale : 1e-8f;
  std::vector<int> idx;
  for (float x : v) {
    const float t = (x - vmin) / scale + 0.5f;
    const int q = std::isnan(t) ? 0 : t >= 2147483648.0f ? INT32_MAX : static_cast<int>(t);
    idx.push_back(std::min(std::max(q, 0), qmax));
  }
  std::vector<uint8_t> out = VllmPack(idx, bits);
  PushF16(out, scale);
  PushF16(out, vmin);
  return out;
}

TEST(KvFormatTurboQuant, KeyBytesEqualVllmStoreKernel) {
  for (int64_t n : {16, 64, 128, 256}) {
    for (const std::vector<float>& x : codec_checks::EdgeCaseRows(n)) {
      EXPECT_EQ(codec_checks::QuantizeRow(TurboQuantMse4Codec(), x), VllmStoreKey(x, 4)) << "n=" << n << " x0=" << x[0];
      EXPECT_EQ(codec_checks::QuantizeRow(TurboQuantMse3Codec(), x), VllmStoreKey(x, 3)) << "n=" << n << " x0=" << x[0];
    }
  }
}

TEST(KvFormatTurboQuant, ValueBytesEqualVllmStoreKernel) {
  for (int64_t n : {16, 64, 128, 256}) {
    for (const std::vector<float>& x : codec_checks::EdgeCaseRows(n)) {
      EXPECT_EQ(codec_checks::QuantizeRow(TurboQuantUniform4Codec(), x), VllmStoreValue(x, 4)) << "n=" << n;
      EXPECT_EQ(codec_checks::QuantizeRow(TurboQuantUniform3Codec(), x), VllmStoreValue(x, 3)) << "n=" << n;
    }
  }
}

TEST(KvFormatTurboQuant, HandComputedValueBytes) {
  // min −1, max 14: scale 1; codes floor(v + 1 + 0.5): 2.5 -> 4 (half up, not to even), −1 -> 0.
  std::vector<float> x(16, 0.0f);
  x[0] = -1, x[1] = 14, x[2] = 2.5f, x[3] = 0.49f;
  const std::vector<uint8_t> got = codec_checks::QuantizeRow(TurboQuantUniform4Codec(), x);
  ASSERT_EQ(got.size(), 12u);
  EXPECT_EQ(got[0], 0xF0);                      // codes 0, 15
  EXPECT_EQ(got[1], 0x14);                      // codes 4, 1 (0.49 + 1.5 = 1.99)
  EXPECT_EQ(got[2], 0x11);                      // zeros: code 1
  EXPECT_EQ(got[8] | (got[9] << 8), 0x3C00);    // scale 1.0
  EXPECT_EQ(got[10] | (got[11] << 8), 0xBC00);  // min −1.0
  // A constant row: scale 1e-8 (f16 0), codes 0, read back as its f16 min.
  std::vector<float> c(16, 0.3f);
  std::vector<float> y(16);
  const std::vector<uint8_t> cq = codec_checks::QuantizeRow(TurboQuantUniform3Codec(), c);
  TurboQuantUniform3Codec().dequantize(cq.data(), y.data(), 16, {});
  for (float v : y) EXPECT_EQ(v, F16ToF32(F32ToF16(0.3f)));
}

// vllm-project/vllm:tests/quantization/test_turboquant.py PRESET_EXPECTED at head_dim 128: key 66 / 50 bytes, value 68
// / 52.
TEST(KvFormatTurboQuant, SlotSizesEqualVllm) {
  EXPECT_EQ(TurboQuantMse4Codec().row_bytes(128, {}), 66u);
  EXPECT_EQ(TurboQuantMse3Codec().row_bytes(128, {}), 50u);
  EXPECT_EQ(TurboQuantUniform4Codec().row_bytes(128, {}), 68u);
  EXPECT_EQ(TurboQuantUniform3Codec().row_bytes(128, {}), 52u);
  codec_checks::ExpectBitsMatchLayout(TurboQuantMse4Codec(), {}, 128, 4.125);
  codec_checks::ExpectBitsMatchLayout(TurboQuantUniform3Codec(), {}, 128, 3.25);
}

// The read: c = codebook[code], ĉ = c / sqrt(Σc² + 1e-16) (the canonical dot), times the f16 norm,
// in the rotated basis; rotated back it is close to the row.
TEST(KvFormatTurboQuant, NormCorrectedReadInRotatedBasis) {
  constexpr int n = 128;
  const std::vector<float> x = codec_checks::GaussianRows(1, n, 77);
  const std::vector<uint8_t> q = codec_checks::QuantizeRow(TurboQuantMse4Codec(), x);
  std::vector<float> y(n), c(n);
  TurboQuantMse4Codec().dequantize(q.data(), y.data(), n, {});
  const auto book = TurboQuantCentroids(n, 4);
  for (int i = 0; i < n; ++i) c[i] = book[(q[i / 2] >> (4 * (i & 1))) & 0xF];
  const float inv = 1.0f / std::sqrt(DotCanonicalScalar(c.data(), static_cast<const float*>(c.data()), n) + 1e-16f);
  const float norm = F16ToF32(static_cast<uint16_t>(q[64] | (q[65] << 8)));
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], (c[i] * inv) * norm) << i;
  HadamardRowsRef(y.data(), 1, n, n);
  double dot = 0, xx = 0, yy = 0;
  for (int i = 0; i < n; ++i) dot += double(x[i]) * y[i], xx += double(x[i]) * x[i], yy += double(y[i]) * y[i];
  EXPECT_GT(dot / std::sqrt(xx * yy), 0.99);                        // vLLM's own round-trip check asks > 0.85
  EXPECT_NEAR(std::sqrt(yy), std::sqrt(xx), 1e-3 * std::sqrt(xx));  // norm correction keeps ‖x‖
}

TEST(KvFormatTurboQuant, PresetsExpandWithEndLayers) {
  auto c = CacheConfig::Parse("kv=turboquant_4bit_nc");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->spec(), "k=turboquant_mse4,v=turboquant_uniform4;layers=ends:k=bf16,v=bf16");
  auto again = CacheConfig::Parse(c->spec());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *c);
  auto k8v4 = CacheConfig::Parse("kv=turboquant_k8v4");
  ASSERT_TRUE(k8v4.ok());
  EXPECT_EQ(k8v4->spec(), "k=fp8_e4m3,v=turboquant_uniform4;layers=ends:k=bf16,v=bf16");
  // vLLM's n = min(2, n_layers // 2) from each end.
  const bool want8[] = {true, true, false, false, false, false, true, true};
  for (int l = 0; l < 8; ++l) EXPECT_EQ(IsEndLayer(l, 8), want8[l]) << l;
  EXPECT_TRUE(IsEndLayer(0, 3) && !IsEndLayer(1, 3) && IsEndLayer(2, 3));
  EXPECT_FALSE(IsEndLayer(0, 1));
  ASSERT_NE(TurboQuantPresetFor(KvFormat::kTurboQuantMse3, KvFormat::kTurboQuantUniform3), nullptr);
  EXPECT_EQ(TurboQuantPresetFor(KvFormat::kTurboQuantMse3, KvFormat::kTurboQuantUniform3)->name, "turboquant_3bit_nc");
  EXPECT_EQ(TurboQuantPresetFor(KvFormat::kQ4_0, KvFormat::kQ4_0), nullptr);
}

// Relative RMS round-trip error in the rotated basis' norm (the codec's own read compared with the
// rotated row), 256 rows of 128 Gaussian values, measured (g++ 12): mse4 0.0962, mse3 0.184,
// uniform4 0.0991, uniform3 0.212. Bands ≈ 1.3× measured; lower bounds band / 2.
TEST(KvFormatTurboQuant, RoundTripErrorBand) {
  constexpr int n = 128;
  std::vector<float> g = codec_checks::GaussianRows(256, n, 1);
  std::vector<float> rotated = g;
  HadamardRowsRef(rotated.data(), 256, n, n);
  // Keys read back rotated: compare against the rotated rows (the same norm, the same basis).
  auto key_error = [&](const RowCodec& codec) {
    double num = 0, den = 0;
    std::vector<uint8_t> buf(codec.row_bytes(n, {}));
    std::vector<float> y(n);
    for (int r = 0; r < 256; ++r) {
      codec.quantize(g.data() + r * n, buf.data(), n, {});
      codec.dequantize(buf.data(), y.data(), n, {});
      for (int i = 0; i < n; ++i) {
        const double d = double(y[i]) - rotated[r * n + i];
        num += d * d, den += double(rotated[r * n + i]) * rotated[r * n + i];
      }
    }
    return std::sqrt(num / den);
  };
  const double k4 = key_error(TurboQuantMse4Codec()), k3 = key_error(TurboQuantMse3Codec());
  const double v4 = codec_checks::RelRmsError(TurboQuantUniform4Codec(), {}, g, n);
  const double v3 = codec_checks::RelRmsError(TurboQuantUniform3Codec(), {}, g, n);
  EXPECT_LE(k4, 0.125);
  EXPECT_GE(k4, 0.125 / 2);
  EXPECT_LE(k3, 0.239);
  EXPECT_GE(k3, 0.239 / 2);
  EXPECT_LE(v4, 0.129);
  EXPECT_GE(v4, 0.129 / 2);
  EXPECT_LE(v3, 0.276);
  EXPECT_GE(v3, 0.276 / 2);
  EXPECT_LT(k4, k3);
  EXPECT_LT(v4, v3);
}

}  // namespace
}  // namespace kvaudit
