// SIMD kernels against their scalar references, and thread-count independence.
#include <gtest/gtest.h>

#include "base/isa.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "ops/activation.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  return testing::NormalRows(1, static_cast<int64_t>(n), seed, scale);
}

TEST(OpsMatmul, GemvMatchesReferenceForOddShapes) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (int in : {1, 15, 16, 17, 33, 64, 384, 1000}) {
      const int out = 37;
      auto x = Random(in, 1), w = Random(static_cast<size_t>(out) * in, 2);
      std::vector<float> ref(out), got(out);
      GemvRef(x.data(), in, w.data(), 0, out, ref.data());
      GemvRows(x.data(), in, w.data(), 0, out, got.data());
      for (int r = 0; r < out; ++r)
        EXPECT_NEAR(got[r], ref[r], 1e-5 * std::sqrt(in) + 1e-6) << "in " << in << " row " << r;
      // A row's result must not depend on which rows share the call (thread splits).
      std::vector<float> split(out);
      GemvRows(x.data(), in, w.data(), 0, 5, split.data());
      GemvRows(x.data(), in, w.data(), 5, out, split.data());
      EXPECT_EQ(std::memcmp(split.data(), got.data(), out * 4), 0);
    }
  });
}

TEST(OpsMatmul, MatMulMatchesReferenceAndIsThreadCountIndependent) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (int n : {1, 2, 7, 64}) {
      const int in = 96, out = 200;
      auto x = Random(static_cast<size_t>(n) * in, 3), w = Random(static_cast<size_t>(out) * in, 4);
      std::vector<float> ref(static_cast<size_t>(n) * out), y1(ref.size()), y2(ref.size());
      MatMulRef(x.data(), n, in, w.data(), out, ref.data());
      ThreadPool p1(1), p2(2);
      MatMul(x.data(), n, in, w.data(), out, y1.data(), p1);
      MatMul(x.data(), n, in, w.data(), out, y2.data(), p2);
      for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y1[i], ref[i], 1e-4) << "n " << n;
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << "n " << n;
    }
  });
}

TEST(OpsActivation, ExpMatchesStdExp) {
  std::vector<float> x;
  for (float v = -110.0f; v <= 90.0f; v += 0.0137f) x.push_back(v);
  std::vector<float> ref(x.size()), got(x.size());
  ExpRef(x.data(), ref.data(), x.size());
  Exp(x.data(), got.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isinf(ref[i])) {
      EXPECT_TRUE(std::isinf(got[i])) << x[i];
      continue;
    }
    EXPECT_NEAR(got[i], ref[i], 3e-7 * ref[i] + 1e-37f) << "x = " << x[i];
  }
}

// The SIMD exp and everything built on it against the scalar twins, bit for bit: a sweep over the
// whole float range plus the clamps, ±0, ±inf and NaN (an exhaustive check of all 2^32 inputs of
// Exp and SiluMul agreed too, when the twins were written).
TEST(OpsActivation, SimdEqualsScalarTwins) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    std::vector<float> x;
    for (uint32_t b = 0; b < 0xffffffffu - 40009u; b += 40009u) x.push_back(BitsToFloat(b));  // all exponents, signs
    for (float v : {-104.0f, -103.99f, 89.0f, 88.72f, 88.73f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN}) x.push_back(v);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> a(n), b(n), up = Random(n, 12);
    Exp(x.data(), a.data(), n);
    ExpScalar(x.data(), b.data(), n);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "Exp";
    SiluMul(x.data(), up.data(), a.data(), n);
    SiluMulScalar(x.data(), up.data(), b.data(), n);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "SiluMul";
    for (int len : {1, 15, 16, 17, 100, 256}) {
      auto s1 = Random(len, 13 + len, 8.0f), s2 = s1;
      ASSERT_EQ(FloatToBits(MaxOf(s1.data(), len)), FloatToBits(MaxOfScalar(s1.data(), len))) << len;
      const float m = MaxOf(s1.data(), len);
      const float sum1 = ExpSubSum(s1.data(), len, m), sum2 = ExpSubSumScalar(s2.data(), len, m);
      ASSERT_EQ(FloatToBits(sum1), FloatToBits(sum2)) << len;
      ASSERT_EQ(std::memcmp(s1.data(), s2.data(), len * 4), 0) << len;
    }
  });
}

TEST(OpsActivation, SiluMulAndSoftmaxMatchReference) {
  for (int n : {1, 16, 29, 1024}) {
    auto g = Random(n, 5, 4.0f), u = Random(n, 6);
    std::vector<float> ref(n), got(n);
    SiluMulRef(g.data(), u.data(), ref.data(), n);
    SiluMul(g.data(), u.data(), got.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(got[i], ref[i], 1e-6f * (1 + std::fabs(ref[i])));
    auto s1 = Random(n, 7, 5.0f), s2 = s1;
    SoftmaxRef(s1.data(), n);
    Softmax(s2.data(), n);
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(s2[i], s1[i], 1e-6f * (1 + s1[i]));
      sum += s2[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(OpsNorm, RmsNormMatchesFormula) {
  const int dim = 48;
  auto x = Random(2 * dim, 8), w = Random(dim, 9);
  std::vector<float> y(2 * dim);
  RmsNorm(x.data(), w.data(), y.data(), 2, dim, 1e-5f);
  for (int r = 0; r < 2; ++r) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += x[r * dim + i] * x[r * dim + i];
    const double inv = 1 / std::sqrt(ss / dim + 1e-5);
    for (int i = 0; i < dim; ++i) EXPECT_NEAR(y[r * dim + i], w[i] * x[r * dim + i] * inv, 1e-5);
  }
}

TEST(OpsRope, InvFreqDefaultLinearLlama3) {
  RopeParams p;
  p.theta = 10000;
  auto f = RopeInvFreq(p, 8);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_NEAR(f[1], std::pow(10000.0, -0.25), 1e-7);
  p.type = RopeType::kLinear;
  p.factor = 4;
  EXPECT_NEAR(RopeInvFreq(p, 8)[1], std::pow(10000.0, -0.25) / 4, 1e-8);
  // llama3: high frequencies (short wavelengths) unchanged, low ones divided by factor.
  p = RopeParams{};
  p.type = RopeType::kLlama3;
  p.theta = 500000;
  p.factor = 8;
  p.low_freq_factor = 1;
  p.high_freq_factor = 4;
  p.original_max_position_embeddings = 64;
  RopeParams d;
  d.theta = 500000;
  auto def = RopeInvFreq(d, 16), l3 = RopeInvFreq(p, 16);
  EXPECT_FLOAT_EQ(l3[0], def[0]);
  EXPECT_NEAR(l3[7], def[7] / 8, 1e-12);
  // GGUF divisors reproduce the computed table.
  RopeParams g;
  g.type = RopeType::kLlama3;
  g.theta = 500000;
  for (int i = 0; i < 8; ++i) g.freq_divisors.push_back(def[i] / l3[i]);
  auto gf = RopeInvFreq(g, 16);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(gf[i], l3[i], 1e-6 * l3[i]);
}

TEST(OpsRope, RotatesHalvesAndKeepsNorm) {
  RopeParams p;
  RopeTable t(p, 8, 16);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y = x;
  t.Apply(y.data(), 1, 1, 3);
  const auto inv = RopeInvFreq(p, 8);
  for (int i = 0; i < 4; ++i) {
    const double a = 3.0 * inv[i];
    EXPECT_NEAR(y[i], x[i] * std::cos(a) - x[i + 4] * std::sin(a), 1e-6);
    EXPECT_NEAR(y[i + 4], x[i + 4] * std::cos(a) + x[i] * std::sin(a), 1e-6);
  }
  std::vector<float> z = x;
  t.Apply(z.data(), 1, 1, 0);  // position 0 is the identity
  EXPECT_EQ(z, x);
}

// Partial rotary (Phi-4-mini): the first dims rotate as a head of that size would, the rest pass.
TEST(OpsRope, PartialRotaryRotatesTheFirstDimsOnly) {
  RopeParams p;
  p.dims = 4;
  const auto inv = RopeInvFreq(p, 8);
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_EQ(inv[1], 1.0f / static_cast<float>(std::pow(10000.0, 0.5)));  // theta^(-2i/dims), not /head_dim
  RopeTable t(p, 8, 16);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y = x;
  t.Apply(y.data(), 1, 1, 3);
  for (int i = 0; i < 2; ++i) {
    const double a = 3.0 * inv[i];
    EXPECT_NEAR(y[i], x[i] * std::cos(a) - x[i + 2] * std::sin(a), 1e-6);
    EXPECT_NEAR(y[i + 2], x[i + 2] * std::cos(a) + x[i] * std::sin(a), 1e-6);
  }
  for (int i = 4; i < 8; ++i) EXPECT_EQ(y[i], x[i]);
}

}  // namespace
}  // namespace kvaudit
