// MXFP4 (quant/mxfp4.cc) against its definition, written here independently of the row loops:
// block_mxfp4 {u8 e; u8 qs[16]} (ggml-common.h), element j the low nibble of qs[j], element j + 16
// the high one; y = kvalues_mxfp4[nibble] · 2^(e-128) (the doubled E2M1 table times ggml-impl.h's
// ggml_e8m0_to_fp32_half). Hand-written blocks at the edge scales, the reference quantizer
// (quantize_row_mxfp4_ref) on hand-checked blocks, and the SIMD dequantizer and in-register gemv
// decoder against the scalar reference on every kernel path.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/isa.h"
#include "base/thread_pool.h"
#include "ops/matmul.h"
#include "ops/weight_matrix.h"
#include "quant/dequantize.h"
#include "quant/quant_type.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

constexpr int kBytes = 17;  // one block: e, then 16 bytes of nibbles
// E2M1 (OCP MX v1.0) 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, doubled.
constexpr int kLevel[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// The definition: level · 2^(e-128), exactly (ldexpf is exact, subnormal results included, and
// inf where the value overflows).
float Expected(int nibble, int e) { return std::ldexp(static_cast<float>(kLevel[nibble]), e - 128); }

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

std::vector<float> Dequantize(const std::vector<uint8_t>& blocks) {
  std::vector<float> y(blocks.size() / kBytes * 32, NAN);  // [32 per block]
  DequantizeBlocksRef(QuantType::kMXFP4, blocks.data(), y.data(), static_cast<int64_t>(y.size()));
  return y;
}

std::vector<uint8_t> Quantize(const std::vector<float>& x) {
  std::vector<uint8_t> q(x.size() / 32 * kBytes, 0xAA);  // [17 per block]
  GetQuantTraits(QuantType::kMXFP4).quantize_ref(x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

TEST(QuantMxfp4, TraitsRow) {
  const QuantTraits& t = GetQuantTraits(QuantType::kMXFP4);
  EXPECT_STREQ(t.name, "mxfp4");  // ggml's type_name
  EXPECT_EQ(t.block_elems, 32);
  EXPECT_EQ(t.block_bytes, kBytes);
  EXPECT_TRUE(F16Fields(QuantType::kMXFP4).empty());
  EXPECT_EQ(E8M0Field(QuantType::kMXFP4), 0);
  EXPECT_NE(t.quantize_ref, nullptr);
  EXPECT_NE(t.dequantize_ref, nullptr);
  EXPECT_NE(t.to_codes, nullptr);  // llama.cpp's integer dot of MXFP4 weights (engine=llama.cpp)
  EXPECT_EQ(QuantRowBytesChecked(QuantType::kMXFP4, 2880), 90u * kBytes);  // a gpt-oss-20b row
}

// The expanded codes are the dequantizer's factors: code · d is every element's value, bit for bit,
// for every scale byte (the largest overflow to inf in both) and every nibble.
TEST(QuantMxfp4, ExpandedCodesTimesScaleAreTheDequantizedValues) {
  std::vector<uint8_t> row(256 * kBytes);  // [256 blocks] block b has scale byte b
  for (size_t b = 0; b < 256; ++b) {
    row[b * kBytes] = static_cast<uint8_t>(b);
    for (int j = 0; j < 16; ++j) row[b * kBytes + 1 + j] = static_cast<uint8_t>((b * 7 + j * 17) & 0xff);
  }
  const int64_t n = 256 * 32;
  std::vector<float> y(n), d(256), m(256);
  std::vector<int8_t> codes(n);
  const QuantTraits& t = GetQuantTraits(QuantType::kMXFP4);
  t.dequantize_ref(row.data(), y.data(), n);
  t.to_codes(row.data(), n, {codes.data(), d.data(), m.data()});
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(Bits(static_cast<float>(codes[i]) * d[i / 32]), Bits(y[i])) << i;
    ASSERT_EQ(Bits(d[i / 32]), Bits(ggml::E8M0ToF32Half(static_cast<uint8_t>(i / 32)))) << i;
  }
}

// ggml_e8m0_to_fp32_half bit for bit: e = 0 and 1 are the subnormals 2^-128 and 2^-127 (not
// flushed, not 2^-127 · 0.5 computed in float), 2 is FLT_MIN, 255 is 2^127 (no NaN).
TEST(QuantMxfp4, ScaleIsGgmlsE8M0Half) {
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(0)), 0x00200000u);
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(1)), 0x00400000u);
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(2)), 0x00800000u);
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(127)), 0x3F000000u);  // 0.5
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(128)), 0x3F800000u);  // 1
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(254)), 0x7E800000u);  // 2^126
  EXPECT_EQ(Bits(ggml::E8M0ToF32Half(255)), 0x7F000000u);  // 2^127
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(ggml::E8M0ToF32Half(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 128)) << "e " << e;
  }
}

// One block per edge scale, each holding every nibble in both halves (low nibble j, high 15 - j):
// subnormal scales (0, 1), the unit scales (127: 0.5, 128: 1) and the top ones (254, 255), where
// the larger levels overflow to ±inf. Code 8 (fp4's -0) is +0.
TEST(QuantMxfp4, HandWrittenBlocksAtEdgeScales) {
  const int scales[] = {0, 1, 127, 128, 254, 255};
  std::vector<uint8_t> blocks;  // [6 blocks of 17 bytes]
  for (int e : scales) {
    blocks.push_back(static_cast<uint8_t>(e));
    for (int j = 0; j < 16; ++j) blocks.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  }
  const std::vector<float> y = Dequantize(blocks);
  int overflowed = 0;
  for (size_t b = 0; b < std::size(scales); ++b) {
    for (int j = 0; j < 16; ++j) {
      const float lo = y[32 * b + j], hi = y[32 * b + 16 + j];
      EXPECT_EQ(Bits(lo), Bits(Expected(j, scales[b]))) << "e " << scales[b] << " element " << j;
      EXPECT_EQ(Bits(hi), Bits(Expected(15 - j, scales[b]))) << "e " << scales[b] << " element " << 16 + j;
      overflowed += (std::isinf(lo) ? 1 : 0) + (std::isinf(hi) ? 1 : 0);
    }
  }
  EXPECT_EQ(Bits(y[8]), 0u) << "code 8 is +0";
  EXPECT_EQ(y[7], 12 * std::ldexp(1.0f, -128));     // 1.5 · 2^-125: subnormal, exact
  EXPECT_EQ(y[32 * 3 + 7], 12.0f);                  // e = 128: the levels themselves
  EXPECT_EQ(y[32 * 4 + 3], std::ldexp(1.5f, 127));  // e = 254: 3 · 2^126, its largest finite level
  // e = 254: ±4 and up overflow (8 codes, 16 elements); e = 255: all but 0, ±1 (12 codes, 24).
  EXPECT_EQ(overflowed, 40);
  EXPECT_EQ(y[32 * 5 + 15], -std::numeric_limits<float>::infinity());
}

// The reference quantizer on blocks whose bytes were worked out by hand from
// quantize_row_mxfp4_ref: e = (uint8_t)(floorf(log2f(amax)) - 2 + 127), each x to the level of
// smallest |level·d - x|, the first on ties (code 0 before code 8, 4 before 6).
TEST(QuantMxfp4, ReferenceQuantizerHandCheckedBlocks) {
  struct Case {
    const char* what;
    std::vector<float> x;  // [32]: the values given, zeros after
    uint8_t e;
    std::vector<uint8_t> qs;  // [16]
  };
  auto block = [](std::vector<float> v) {
    v.resize(32, 0.0f);
    return v;
  };
  std::vector<float> levels(32);  // every level at d = 0.5, high half reversed
  for (int j = 0; j < 16; ++j) levels[j] = 0.5f * kLevel[j], levels[16 + j] = 0.5f * kLevel[15 - j];
  const float tiny = std::ldexp(1.0f, -128);  // d at e = 0
  const std::vector<Case> cases = {
      {"zeros of both signs", block({0.0f, -0.0f, 0.0f}), 0, std::vector<uint8_t>(16, 0)},
      // amax 6: floor(log2 6) = 2, e = 127, d = 0.5: each value is its own level; 0 is code 0.
      {"every level",
       levels,
       127,
       {0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x07, 0x70, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F}},
      // d = 0.5: 5 between 4 and 6 -> 4 (code 6); -5 -> -4 (14); ±0.25 -> 0; 2.5 -> 2 (4); 7 clamps
      // to 6 (7); -7.9 to -6 (15); 1.25 -> 1 (2); 1.3 -> 1.5 (3); a NaN is skipped by amax, code 0.
      {"ties, clamps and a NaN",
       block({6.0f, 5.0f, -5.0f, 0.25f, -0.25f, 2.5f, 7.0f, -7.9f, 1.25f, 1.3f, NAN}),
       127,
       {0x07, 0x06, 0x0E, 0x00, 0x00, 0x04, 0x07, 0x0F, 0x02, 0x03, 0x00, 0, 0, 0, 0, 0}},
      // amax 1000: floor(log2 1000) = 9, e = 134, d = 64: 1000 -> 768 (7), 1 and -30 -> 0,
      // 100 -> 128 (2), -100 -> -128 (10), 500 -> 512 (6), -700 -> -768 (15); in the high half
      // (elements 16..) 0.01 -> 0 and -1000 -> -768 (15).
      {"outliers",
       block({1000.0f, 1.0f, -30.0f, 100.0f, -100.0f, 500.0f, -700.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.01f, -1000.0f}),
       134,
       {0x07, 0xF0, 0x00, 0x02, 0x0A, 0x06, 0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      // amax 12·2^-128 = 1.5·2^-125: e = 0 and d = 2^-128 subnormal, values are exact levels.
      {"subnormal scale",
       block({8 * tiny, -8 * tiny, 2 * tiny, 3 * tiny, 12 * tiny, -tiny}),
       0,
       {0x06, 0x0E, 0x02, 0x03, 0x07, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      // amax 2^-126: floorf(log2f) - 2 + 127 = -1, which GCC's x86-64 cast to uint8_t wraps to 255;
      // d = 2^127 and every value is code 0.
      {"tiny values wrap the exponent",
       block({std::ldexp(1.0f, -126), -std::ldexp(1.0f, -127), std::ldexp(1.0f, -130)}), 255,
       std::vector<uint8_t>(16, 0)},
      // amax 2^-140 (subnormal): -15 -> 241.
      {"a subnormal amax", block({std::ldexp(-1.0f, -140)}), 241, std::vector<uint8_t>(16, 0)},
      // 8 - 2^-21: log2f rounds to 3, so e = 128 and d = 1: coded 8 (6), where its true exponent
      // (2) would have clamped it to 6 at d = 0.5; 7 ties 6 and 8 -> 6 (5).
      {"just below a power of two",
       block({std::nextafter(8.0f, 0.0f), 6.0f, 7.0f}),
       128,
       {0x06, 0x05, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      // An infinite amax: floorf(log2f(inf)) is inf, and the cast gives 0: d = 2^-128, every
      // error is inf or ~|x|, so every code is 0.
      {"inf", block({std::numeric_limits<float>::infinity(), 1.0f, -1.0f}), 0, std::vector<uint8_t>(16, 0)},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(c.x.size(), 32u) << c.what;
    const std::vector<uint8_t> q = Quantize(c.x);
    ASSERT_EQ(q.size(), static_cast<size_t>(kBytes));
    EXPECT_EQ(q[0], c.e) << c.what;
    EXPECT_EQ(std::vector<uint8_t>(q.begin() + 1, q.end()), c.qs) << c.what;
  }
}

// Gaussian rows: the error an MXFP4 block gives (E2M1's 3 bits of magnitude under a power-of-two
// scale: ~11% relative RMS), and a second pass over the dequantized values writes the same bytes
// (the block's top level keeps its exponent, every value sits on a level, code 8 is never chosen).
TEST(QuantMxfp4, GaussianRoundTripAndRequantizationIsIdentity) {
  const std::vector<float> x = testing::NormalRows(64, 256, 31, 0.02f);  // [64 rows, 256]
  const std::vector<uint8_t> q = Quantize(x);
  const std::vector<float> y = Dequantize(q);
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double{y[i]} - x[i]) * (double{y[i]} - x[i]);
    den += double{x[i]} * x[i];
  }
  const double rel_rms = std::sqrt(num / den);
  std::printf("mxfp4 gaussian rel-rms %.4f\n", rel_rms);
  EXPECT_GT(rel_rms, 0.05);
  EXPECT_LT(rel_rms, 0.2);
  EXPECT_EQ(Quantize(y), q);
}

// Every scale byte with random nibbles, every kernel path: the SIMD row dequantizer is bitwise
// the reference (subnormal, normal and overflowing values alike).
TEST(QuantMxfp4, SimdDequantizerIsTheReferenceForEveryScale) {
  std::vector<uint8_t> blocks = testing::RandomBytes(256 * kBytes + 3, 41);  // [3 + 256 blocks]
  for (int e = 0; e < 256; ++e) blocks[3 + static_cast<size_t>(e) * kBytes] = static_cast<uint8_t>(e);
  const int64_t n = 256 * 32;
  std::vector<float> ref(n);  // [n]
  DequantizeBlocksRef(QuantType::kMXFP4, blocks.data() + 3, ref.data(), n);
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    std::vector<float> simd(n, NAN);  // [n]
    DequantizeBlocks(QuantType::kMXFP4, blocks.data() + 3, simd.data(), n);
    EXPECT_EQ(std::memcmp(simd.data(), ref.data(), n * sizeof(float)), 0);
  });
}

// The decode gemv (in-register decoder on AVX-512, scratch kernels elsewhere) and the prefill
// matmul on MXFP4 rows whose scales span subnormal to large d, every path: bitwise the matmul of
// the same matrix dequantized to f32.
TEST(QuantMxfp4, PackedGemvAndMatmulAreTheF32MatmulOnEveryPath) {
  constexpr int64_t kRows = 37, kCols = 320;
  WeightMatrix w;
  w.Resize(kRows, kCols, QuantType::kMXFP4);
  const std::vector<uint8_t> bytes = testing::RandomBytes(static_cast<int64_t>(w.bytes()), 43);
  std::memcpy(w.mutable_row(0), bytes.data(), bytes.size());
  testing::Rng rng(44);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t b = 0; b < kCols / 32; ++b) {
      // Mostly d in [2^-9, 2^-2]; one block in 8 at e = 0..3 (subnormal and smallest normal d).
      const uint8_t e = static_cast<uint8_t>(rng.Below(8) == 0 ? rng.Below(4) : 119 + rng.Below(8));
      w.mutable_row(r)[b * kBytes] = e;
    }
  }
  std::vector<float> wf(kRows * kCols);  // [kRows, kCols]
  DequantizeBlocksRef(QuantType::kMXFP4, w.mutable_row(0), wf.data(), kRows * kCols);
  const WeightView f32{wf.data(), QuantType::kF32, kRows, kCols};
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    ThreadPool pool(2);
    for (int64_t n : {1, 5}) {
      const std::vector<float> x = testing::NormalRows(n, kCols, 45);
      std::vector<float> want(n * kRows), got(n * kRows);  // [n, kRows] each
      MatMul(x.data(), n, f32, want.data(), pool);
      MatMul(x.data(), n, w.view(), got.data(), pool);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "n " << n;
    }
  });
}

}  // namespace
}  // namespace kvaudit
