// KIVI fused kernels (kv/store/kivi_kernels.h): the dispatching kernels (AVX-512 where G % 16 == 0,
// AVX2 where G % 8 == 0) give bitwise their scalar references for every group size, bit width, query / weight-row count
// and token range; both are close to a double-precision evaluation of the dequantized cache; and a token's score does
// not depend on the range or the other queries of the call.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/half.h"
#include "kv/formats/asym_group_quant.h"
#include "kv/store/kivi_kernels.h"
#include "base/simd.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

// Random packed groups: codes [n_bytes] uniform, (scale, min) pairs [n_pairs][2] of f16 values
// (scales >= 0, some exactly 0 as constant groups store them; mins of either sign).
struct Packed {
  std::vector<uint8_t> codes;
  std::vector<uint16_t> sm;
};
Packed RandomPacked(int64_t n_bytes, int64_t n_pairs, uint32_t seed) {
  testing::Rng rng(seed);
  Packed p;
  p.codes = testing::RandomBytes(n_bytes, seed + 1000);
  p.sm.resize(n_pairs * 2);
  for (int64_t i = 0; i < n_pairs; ++i) {
    p.sm[2 * i] = F32ToF16(i % 11 == 5 ? 0.0f : std::fabs(rng.Normal()) * 0.3f);
    p.sm[2 * i + 1] = F32ToF16(rng.Normal());
  }
  return p;
}

std::vector<float> Gaussian(size_t n, uint32_t seed) { return testing::NormalRows(1, static_cast<int64_t>(n), seed); }

void ExpectBitwise(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << what << " element " << i;
  }
}

struct Shape {
  int hd, G;
};
// SIMD-path groups (G % 16 == 0; G % 8 == 0 on avx2: 8, 24) and reference-path groups.
const Shape kShapes[] = {{128, 32}, {128, 16}, {128, 128}, {96, 48}, {64, 64}, {80, 16},
                         {64, 8},   {64, 1},   {96, 3},    {64, 2},  {72, 24}};

TEST(KiviKernels, KeyGroupDotEqualsReferenceBitwise) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (const Shape sh : kShapes) {
      for (int bits : {2, 4}) {
        const int64_t cb = AsymCodeBytes(sh.G, bits);
        const Packed pk = RandomPacked(sh.hd * cb, sh.hd, 11 + sh.G + bits);
        constexpr int kQStride = 1040;  // queries [n_q, kQStride] (> hd)
        const auto q = Gaussian(9 * kQStride, 3);
        for (int n_q : {1, 2, 3, 4, 5, 8, 9}) {
          for (auto [lo, hi] : {std::pair{0, sh.G}, std::pair{1, sh.G}, std::pair{sh.G / 2, sh.G / 2 + 1},
                                std::pair{0, (sh.G + 1) / 2}, std::pair{sh.G - 1, sh.G}}) {
            const int n = hi - lo, out_stride = n + 3;
            std::vector<float> got(n_q * out_stride, -7.0f), want(n_q * out_stride, -7.0f);
            KiviKeyGroupDot(pk.codes.data(), pk.sm.data(), sh.hd, sh.G, bits, q.data(), kQStride, n_q, lo, hi,
                            got.data(), out_stride);
            const std::string what = "hd " + std::to_string(sh.hd) + " G " + std::to_string(sh.G) + " bits " +
                                     std::to_string(bits) + " n_q " + std::to_string(n_q) + " [" + std::to_string(lo) +
                                     "," + std::to_string(hi) + ")";
            if (isa !=
                Isa::kPortable) {  // else KiviKeyGroupDot is the reference (bits pinned by kv_cross_build_bits_test)
              KiviKeyGroupDotRef(pk.codes.data(), pk.sm.data(), sh.hd, sh.G, bits, q.data(), kQStride, n_q, lo, hi,
                                 want.data(), out_stride);
              ExpectBitwise(got, want, what);  // incl. the untouched padding (-7)
            }
            for (int i = 0; i < n_q; ++i) {  // the padding past each query's n scores is never written
              for (int t = n; t < out_stride; ++t) ASSERT_EQ(got[i * out_stride + t], -7.0f) << what << " padding";
            }
            for (int i = 0; i < n_q; ++i) {
              for (int t = lo; t < hi; ++t) {
                double ref = 0, mag = 0;
                for (int c = 0; c < sh.hd; ++c) {
                  const double k =
                      AsymCode(pk.codes.data() + c * cb, t, bits) * static_cast<double>(F16ToF32(pk.sm[2 * c])) +
                      F16ToF32(pk.sm[2 * c + 1]);
                  ref += q[i * kQStride + c] * k;
                  mag += std::fabs(q[i * kQStride + c] * k);
                }
                ASSERT_NEAR(got[i * out_stride + t - lo], ref, 1e-5 * mag + 1e-6) << what << " q " << i << " t " << t;
              }
            }
          }
        }
      }
    }
  });
}

// A score is a function of (query, token, group) only: any sub-range, any query count.
TEST(KiviKernels, KeyScoreDoesNotDependOnRangeOrQueryCount) {
  for (const Shape sh : kShapes) {
    for (int bits : {2, 4}) {
      const Packed pk = RandomPacked(sh.hd * AsymCodeBytes(sh.G, bits), sh.hd, 5 + bits);
      const auto q = Gaussian(9 * sh.hd, 4);
      std::vector<float> all(9 * sh.G), one(1);
      KiviKeyGroupDot(pk.codes.data(), pk.sm.data(), sh.hd, sh.G, bits, q.data(), sh.hd, 9, 0, sh.G, all.data(), sh.G);
      for (int i = 0; i < 9; ++i) {
        for (int t = 0; t < sh.G; ++t) {
          KiviKeyGroupDot(pk.codes.data(), pk.sm.data(), sh.hd, sh.G, bits, q.data() + i * sh.hd, 0, 1, t, t + 1,
                          one.data(), 0);
          ASSERT_EQ(std::bit_cast<uint32_t>(one[0]), std::bit_cast<uint32_t>(all[i * sh.G + t]))
              << "hd " << sh.hd << " G " << sh.G << " bits " << bits << " q " << i << " t " << t;
        }
      }
    }
  }
}

TEST(KiviKernels, ValueRowsAxpyEqualsReferenceBitwise) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (const Shape sh : kShapes) {
      for (int bits : {2, 4}) {
        const int ng = sh.hd / sh.G;
        const int64_t row_bytes = ng * AsymCodeBytes(sh.G, bits);
        constexpr int kRows = 40, kWStride = 45;  // weights [n_w, kWStride]
        const Packed pk = RandomPacked(kRows * row_bytes, kRows * ng, 21 + sh.G + bits);
        const auto w = Gaussian(9 * kWStride, 6);
        for (int n_w : {1, 2, 3, 4, 5, 7, 8, 9}) {
          for (int n_rows : {1, 7, kRows}) {
            const int acc_stride = sh.hd + 5;
            const auto acc0 = Gaussian(static_cast<size_t>(n_w) * acc_stride, 8);
            std::vector<float> got = acc0, want = acc0;
            KiviValueRowsAxpy(pk.codes.data(), pk.sm.data(), n_rows, sh.hd, sh.G, bits, w.data(), kWStride, n_w,
                              got.data(), acc_stride);
            const std::string what = "hd " + std::to_string(sh.hd) + " G " + std::to_string(sh.G) + " bits " +
                                     std::to_string(bits) + " n_w " + std::to_string(n_w) + " rows " +
                                     std::to_string(n_rows);
            if (isa != Isa::kPortable) {  // else KiviValueRowsAxpy is the reference
              KiviValueRowsAxpyRef(pk.codes.data(), pk.sm.data(), n_rows, sh.hd, sh.G, bits, w.data(), kWStride, n_w,
                                   want.data(), acc_stride);
              ExpectBitwise(got, want, what);  // incl. the untouched padding past hd
            }
            for (size_t i = 0; i < got.size(); ++i) {  // the padding past hd is never written
              if (static_cast<int>(i % acc_stride) >= sh.hd) {
                ASSERT_EQ(got[i], acc0[i]) << what << " padding " << i;
              }
            }
            for (int i = 0; i < n_w; ++i) {
              for (int c = 0; c < sh.hd; ++c) {
                const int g = c / sh.G;
                double ref = acc0[i * acc_stride + c], mag = std::fabs(ref);
                for (int r = 0; r < n_rows; ++r) {
                  const uint16_t* smg = pk.sm.data() + (r * ng + g) * 2;
                  const double x =
                      AsymCode(pk.codes.data() + r * row_bytes + g * AsymCodeBytes(sh.G, bits), c % sh.G, bits) *
                          static_cast<double>(F16ToF32(smg[0])) +
                      F16ToF32(smg[1]);
                  ref += w[i * kWStride + r] * x;
                  mag += std::fabs(w[i * kWStride + r] * x);
                }
                ASSERT_NEAR(got[i * acc_stride + c], ref, 1e-5 * mag + 1e-6) << what << " w " << i << " c " << c;
              }
            }
          }
        }
      }
    }
  });
}

// Rows applied in two calls (split at any row) give the bits of one call: one fma per row, in order.
TEST(KiviKernels, ValueRowsAxpyIsSplitInvariant) {
  for (const Shape sh : kShapes) {
    for (int bits : {2, 4}) {
      const int ng = sh.hd / sh.G;
      const int64_t row_bytes = ng * AsymCodeBytes(sh.G, bits);
      constexpr int kRows = 33, kNw = 4;
      const Packed pk = RandomPacked(kRows * row_bytes, kRows * ng, 2 + bits);
      const auto w = Gaussian(kNw * kRows, 9), acc0 = Gaussian(kNw * sh.hd, 10);
      std::vector<float> whole = acc0;
      KiviValueRowsAxpy(pk.codes.data(), pk.sm.data(), kRows, sh.hd, sh.G, bits, w.data(), kRows, kNw, whole.data(),
                        sh.hd);
      for (int cut : {1, 16, 32}) {
        std::vector<float> split = acc0;
        KiviValueRowsAxpy(pk.codes.data(), pk.sm.data(), cut, sh.hd, sh.G, bits, w.data(), kRows, kNw, split.data(),
                          sh.hd);
        for (int i = 0; i < kNw; ++i) {  // the rest weight row by weight row
          KiviValueRowsAxpy(pk.codes.data() + cut * row_bytes, pk.sm.data() + cut * ng * 2, kRows - cut, sh.hd, sh.G,
                            bits, w.data() + i * kRows + cut, kRows, 1, split.data() + i * sh.hd, sh.hd);
        }
        ExpectBitwise(split, whole,
                      "hd " + std::to_string(sh.hd) + " G " + std::to_string(sh.G) + " bits " + std::to_string(bits) +
                          " cut " + std::to_string(cut));
      }
    }
  }
}

}  // namespace
}  // namespace kvaudit
