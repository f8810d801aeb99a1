// Shared helpers for the llama.cpp block-format tests (kv_format_*_test.cc, quant_q8_activation_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kv/formats/row_codec.h"
#include "unit/kv_codec_checks.h"
#include "support/random_rows.h"

namespace kvaudit::block_test {

// One 32-element input block and the bytes llama.cpp's quantizer writes for it (hex).
struct Golden {
  const char* name;
  float x[32];
  const char* hex;
};

inline std::string ToHex(const uint8_t* p, size_t n) {
  std::string s;
  char buf[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    s += buf;
  }
  return s;
}

// [n] normal samples of standard deviation sigma.
inline std::vector<float> Gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  return testing::NormalRows(1, static_cast<int64_t>(n), seed, sigma);
}

// [rows, dim] Gaussian rows where channels 7, 50 and 99 (mod dim) are 50x larger: the outlier
// channels real keys have.
inline bool IsOutlierChannel(int i, int dim) { return i == 7 % dim || i == 50 % dim || i == 99 % dim; }
inline std::vector<float> GaussianWithOutliers(int rows, int dim, uint32_t seed) {
  std::vector<float> v = Gaussian(static_cast<size_t>(rows) * dim, seed);
  for (int r = 0; r < rows; ++r)
    for (int c : {7, 50, 99}) v[static_cast<size_t>(r) * dim + c % dim] *= 50.0f;
  return v;
}

// sqrt(Σ(y-x)² / Σx²) after a quantize/dequantize round trip of every [dim] row; with
// ordinary_only, over the non-outlier channels only (the ones an outlier in the block crushes).
inline double RoundTripRelRms(const RowCodec& codec, const std::vector<float>& x, int dim, bool ordinary_only = false) {
  const CodecParams p;
  std::vector<uint8_t> packed(codec.row_bytes(dim, p));  // [row_bytes]
  std::vector<float> y(dim);                             // [dim]
  double err = 0, ref = 0;
  for (size_t r = 0; r < x.size() / dim; ++r) {
    const float* xr = x.data() + r * dim;
    codec.quantize(xr, packed.data(), dim, p);
    codec.dequantize(packed.data(), y.data(), dim, p);
    for (int i = 0; i < dim; ++i) {
      if (ordinary_only && IsOutlierChannel(i, dim)) continue;
      err += (static_cast<double>(y[i]) - xr[i]) * (static_cast<double>(y[i]) - xr[i]);
      ref += static_cast<double>(xr[i]) * xr[i];
    }
  }
  return std::sqrt(err / ref);
}

// The SIMD kernels (`codec`) equal their scalar twins (`ref`) bit for bit where the build has both
// (codec_checks::TwoKernelPaths), and equal dequantize-then-compute in double within 1e-5 of
// Σ|v_i·q_i| (the dot's condition scale, so cancellation does not inflate the check).
inline void CheckDotAndAxpy(const RowCodec& codec, const RowCodec& ref) {
  const CodecParams p;
  const bool two_paths = codec_checks::TwoKernelPaths(codec, ref);
  uint32_t seed = 1;
  for (int dim : {32, 64, 128, 256}) {
    for (int rep = 0; rep < 20; ++rep) {
      const std::vector<float> x = rep % 4 == 3 ? GaussianWithOutliers(1, dim, seed++) : Gaussian(dim, seed++);
      const std::vector<float> q = Gaussian(dim, seed++, 0.5f);
      std::vector<uint8_t> packed(codec.row_bytes(dim, p));  // [row_bytes]
      std::vector<float> v(dim);                             // [dim] dequantized row
      codec.quantize(x.data(), packed.data(), dim, p);
      codec.dequantize(packed.data(), v.data(), dim, p);
      double exact = 0, scale = 0;
      for (int i = 0; i < dim; ++i) {
        exact += static_cast<double>(v[i]) * q[i];
        scale += std::fabs(static_cast<double>(v[i]) * q[i]);
      }
      const float f = codec.dot(packed.data(), q.data(), dim, p);
      if (two_paths) {
        ASSERT_EQ(f, ref.dot(packed.data(), q.data(), dim, p)) << codec.name << " dim " << dim << " rep " << rep;
      }
      ASSERT_NEAR(f, exact, 1e-5 * scale) << codec.name << " dim " << dim << " rep " << rep;

      const float w = 0.37f + 0.01f * rep;
      const std::vector<float> acc0 = Gaussian(dim, seed++);
      std::vector<float> a = acc0, b = acc0;  // [dim] each
      if (two_paths) ref.axpy(packed.data(), w, a.data(), dim, p);
      codec.axpy(packed.data(), w, b.data(), dim, p);
      for (int i = 0; i < dim; ++i) {
        const double exact_i = acc0[i] + static_cast<double>(w) * v[i];
        const double tol = std::fabs(acc0[i]) + std::fabs(static_cast<double>(w) * v[i]);
        if (two_paths) {
          ASSERT_EQ(b[i], a[i]) << codec.name << " dim " << dim << " i " << i;
        }
        ASSERT_NEAR(b[i], exact_i, 1e-5 * tol) << codec.name << " dim " << dim << " i " << i;
      }
    }
  }
}

}  // namespace kvaudit::block_test
