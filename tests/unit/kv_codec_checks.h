// Shared checks for the KV row-codec tests (tests/unit/kv_format_*_test.cc): seeded Gaussian rows
// (tests/support/random_rows.h), round-trip error, SIMD-vs-scalar agreement and fused dot/axpy
// against dequantize-then-compute.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kv/formats/row_codec.h"
#include "support/random_rows.h"

namespace kvaudit::codec_checks {

// [rows, n] standard normal values.
inline std::vector<float> GaussianRows(int64_t rows, int64_t n, uint64_t seed) {
  return testing::NormalRows(rows, n, seed);
}

// [rows, n] standard normal values with 4 fixed channels (the same in every row, as outlier key
// channels are) scaled by 50.
inline std::vector<float> OutlierRows(int64_t rows, int64_t n, uint64_t seed) {
  std::vector<float> x = GaussianRows(rows, n, seed);
  const int64_t channels[4] = {3 % n, 37 % n, 70 % n, 101 % n};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c : channels) x[static_cast<size_t>(r * n + c)] *= 50.0f;
  }
  return x;
}

// sqrt(Σ (dequant(quant(x)) − x)² / Σ x²) over all rows.
inline double RelRmsError(const RowCodec& c, const CodecParams& p, const std::vector<float>& x, int64_t n) {
  const int64_t rows = static_cast<int64_t>(x.size()) / n;
  std::vector<uint8_t> buf(c.row_bytes(n, p));
  std::vector<float> y(static_cast<size_t>(n));
  double num = 0, den = 0;
  for (int64_t r = 0; r < rows; ++r) {
    c.quantize(x.data() + r * n, buf.data(), n, p);
    c.dequantize(buf.data(), y.data(), n, p);
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(y[i]) - x[static_cast<size_t>(r * n + i)];
      num += d * d;
      den += static_cast<double>(x[static_cast<size_t>(r * n + i)]) * x[static_cast<size_t>(r * n + i)];
    }
  }
  return std::sqrt(num / den);
}

// Quantizes [rows, n] rows with `simd` and checks against `ref` (the scalar twin): identical bytes;
// dot within 1e-6 of Σ|y·q| and axpy within 1e-6 of |acc| + |w·y| (SIMD vs scalar); and dot/axpy of
// `simd` against dequantize-then-compute in double within 1e-5 of the same magnitudes.
inline void ExpectKernelsAgree(const RowCodec& simd, const RowCodec& ref, const CodecParams& p,
                               const std::vector<float>& x, int64_t n, uint64_t seed) {
  const int64_t rows = static_cast<int64_t>(x.size()) / n;
  const std::vector<float> q = GaussianRows(rows, n, seed);
  std::vector<uint8_t> a(simd.row_bytes(n, p)), b(ref.row_bytes(n, p));
  std::vector<float> y(static_cast<size_t>(n)), acc_s(static_cast<size_t>(n)), acc_r(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * n;
    const float* qr = q.data() + r * n;
    simd.quantize(xr, a.data(), n, p);
    ref.quantize(xr, b.data(), n, p);
    ASSERT_EQ(a, b) << simd.name << " row " << r;
    simd.dequantize(a.data(), y.data(), n, p);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += static_cast<double>(y[i]) * qr[i];
      mag += std::fabs(static_cast<double>(y[i]) * qr[i]);
    }
    const float ds = simd.dot(a.data(), qr, n, p), dr = ref.dot(a.data(), qr, n, p);
    EXPECT_LE(std::fabs(ds - dr), 1e-6 * mag + 1e-30) << simd.name << " dot row " << r;
    EXPECT_LE(std::fabs(ds - exact), 1e-5 * mag + 1e-30) << simd.name << " dot vs dequant row " << r;
    const float w = 0.37f + 0.01f * static_cast<float>(r);
    for (int64_t i = 0; i < n; ++i) acc_s[i] = acc_r[i] = qr[i];
    simd.axpy(a.data(), w, acc_s.data(), n, p);
    ref.axpy(a.data(), w, acc_r.data(), n, p);
    for (int64_t i = 0; i < n; ++i) {
      const double exact_i = static_cast<double>(qr[i]) + static_cast<double>(w) * y[i];
      const double m = std::fabs(qr[i]) + std::fabs(w * y[i]);
      ASSERT_LE(std::fabs(acc_s[i] - acc_r[i]), 1e-6 * m + 1e-30) << simd.name << " axpy " << r << "," << i;
      ASSERT_LE(std::fabs(acc_s[i] - exact_i), 1e-5 * m + 1e-30) << simd.name << " axpy vs dequant " << r << "," << i;
    }
  }
}

// Storage bits per element reported by the codec equal its row size.
inline void ExpectBitsMatchLayout(const RowCodec& c, const CodecParams& p, int64_t n, double expected_bpe) {
  EXPECT_DOUBLE_EQ(c.bits_per_element(n, p), expected_bpe) << c.name;
  EXPECT_DOUBLE_EQ(8.0 * static_cast<double>(c.row_bytes(n, p)) / static_cast<double>(n), expected_bpe) << c.name;
}

}  // namespace kvaudit::codec_checks
