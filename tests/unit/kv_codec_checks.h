// Shared checks for the KV row-codec tests (tests/unit/kv_format_*_test.cc): seeded Gaussian rows
// (tests/support/random_rows.h), round-trip error, SIMD-vs-scalar agreement and fused dot/axpy
// against dequantize-then-compute.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kv/formats/float_codecs.h"
#include "kv/formats/fp8.h"
#include "kv/formats/int_group.h"
#include "kv/formats/ggml_block_codecs.h"
#include "kv/formats/row_codec.h"
#include "base/isa.h"
#include "base/simd.h"
#include "support/random_rows.h"

namespace kvaudit::codec_checks {

// Every row codec with its scalar twin and the row lengths its tests use (both kernel paths).
struct Case {
  const RowCodec* simd;
  const RowCodec* ref;
  CodecParams params;
  std::vector<int> lengths;  // row lengths to test
};

inline std::vector<Case> AllCodecs() {
  const std::vector<int> blocks = {32, 64, 96, 128, 256};
  const std::vector<int> floats = {8,  12, 16, 40,
                                   64, 80, 128};  // 8, 40: not multiples of 16, 12 not of 8 (fallback paths)
  CodecParams scaled;
  scaled.scale = 0.37f;  // fp8 calib-style scale
  std::vector<Case> cases = {
      {&F32Codec(), &F32CodecRef(), {}, floats},
      {&F16Codec(), &F16CodecRef(), {}, floats},
      {&BF16Codec(), &BF16CodecRef(), {}, floats},
      {&Fp8E4M3Codec(), &Fp8E4M3CodecRef(), scaled, floats},
      {&Fp8E5M2Codec(), &Fp8E5M2CodecRef(), {}, floats},
      {&Fp8E4M3DynamicCodec(), &Fp8E4M3DynamicCodecRef(), {}, blocks},
      {&Fp8E5M2DynamicCodec(), &Fp8E5M2DynamicCodecRef(), {}, blocks},
      {&Q8_0Codec(), &Q8_0CodecRef(), {}, blocks},
      {&Q4_0Codec(), &Q4_0CodecRef(), {}, blocks},
      {&Q4_1Codec(), &Q4_1CodecRef(), {}, blocks},
      {&Q5_0Codec(), &Q5_0CodecRef(), {}, blocks},
      {&Q5_1Codec(), &Q5_1CodecRef(), {}, blocks},
      {&Iq4NlCodec(), &Iq4NlCodecRef(), {}, blocks},
  };
  for (int group : {8, 16, 32, 64, 96}) {  // 8, 16: not multiples of 32 (fallback path); 96: not a power of 2
    CodecParams p;
    p.group = group;
    const std::vector<int> lengths = group == 96 ? std::vector<int>{96, 192} : std::vector<int>{64, 128, 192};
    cases.push_back({&Int8Codec(), &Int8CodecRef(), p, lengths});
    cases.push_back({&Int4Codec(), &Int4CodecRef(), p, lengths});
  }
  return cases;
}

// Runs `body` once per kernel path this CPU supports (base/isa.h), that path active: the codecs
// F32Codec() & co. return inside it are that path's. Failures name the path.
template <class Body>
void ForEachPath(Body&& body) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    body();
  });
}

// Whether `simd` and `ref` are two different sets of functions on the active path. On the portable
// path the dispatched codec's kernels ARE the reference twins (checked here: the same functions),
// so there is nothing to compare; tests/unit/kv_cross_build_bits_test.cc pins their bits instead.
// On AVX2 they are the twins' own copy compiled in the AVX2 pass (hardware FMA,
// kv/formats/codec_kernels_ref.inl.h), on AVX-512 the SIMD kernels: compared bit for bit.
inline bool TwoKernelPaths(const RowCodec& simd, const RowCodec& ref) {
  const bool same =
      simd.dot == ref.dot && simd.axpy == ref.axpy && simd.dot_rows == ref.dot_rows && simd.axpy_rows == ref.axpy_rows;
  EXPECT_EQ(same, ActiveIsa() == Isa::kPortable)
      << simd.name << ": dispatched kernels are " << (same ? "" : "not ") << "the reference twins";
  return !same;
}

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

// Quantizes [rows, n] rows with `simd` and checks, where the active path has two kernel paths, against
// `ref` (the scalar twin): dot within 1e-6 of Σ|y·q| and axpy within 1e-6 of |acc| + |w·y|; and
// dot/axpy of `simd` against dequantize-then-compute in double within 1e-5 of the same magnitudes.
// (Both codecs share one quantizer, so its bytes are not compared.)
inline void ExpectKernelsAgree(const RowCodec& simd, const RowCodec& ref, const CodecParams& p,
                               const std::vector<float>& x, int64_t n, uint64_t seed) {
  const int64_t rows = static_cast<int64_t>(x.size()) / n;
  const std::vector<float> q = GaussianRows(rows, n, seed);
  const bool two_paths = TwoKernelPaths(simd, ref);
  std::vector<uint8_t> a(simd.row_bytes(n, p));
  std::vector<float> y(static_cast<size_t>(n)), acc_s(static_cast<size_t>(n)), acc_r(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * n;
    const float* qr = q.data() + r * n;
    simd.quantize(xr, a.data(), n, p);
    simd.dequantize(a.data(), y.data(), n, p);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += static_cast<double>(y[i]) * qr[i];
      mag += std::fabs(static_cast<double>(y[i]) * qr[i]);
    }
    const float ds = simd.dot(a.data(), qr, n, p);
    if (two_paths) {
      EXPECT_LE(std::fabs(ds - ref.dot(a.data(), qr, n, p)), 1e-6 * mag + 1e-30) << simd.name << " dot row " << r;
    }
    EXPECT_LE(std::fabs(ds - exact), 1e-5 * mag + 1e-30) << simd.name << " dot vs dequant row " << r;
    const float w = 0.37f + 0.01f * static_cast<float>(r);
    for (int64_t i = 0; i < n; ++i) acc_s[i] = acc_r[i] = qr[i];
    simd.axpy(a.data(), w, acc_s.data(), n, p);
    if (two_paths) ref.axpy(a.data(), w, acc_r.data(), n, p);
    for (int64_t i = 0; i < n; ++i) {
      const double exact_i = static_cast<double>(qr[i]) + static_cast<double>(w) * y[i];
      const double m = std::fabs(qr[i]) + std::fabs(w * y[i]);
      if (two_paths) {
        ASSERT_LE(std::fabs(acc_s[i] - acc_r[i]), 1e-6 * m + 1e-30) << simd.name << " axpy " << r << "," << i;
      }
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
