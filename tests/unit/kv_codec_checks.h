// Shared checks for the KV row-codec tests (tests/unit/kv_format_*_test.cc): seeded Gaussian rows
// (tests/support/random_rows.h), round-trip error, SIMD-vs-scalar agreement and fused dot/axpy
// against dequantize-then-compute.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kv/formats/float_codecs.h"
#include "kv/formats/format_table.h"
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
  std::vector<Case> cases;
  // Every format of the table with a row codec (kv/formats/format_table.h), from its row: a new
  // format is in these checks by its row alone. Int groups are listed below per group size.
  for (const FormatRow& r : FormatTable()) {
    if (r.codec == nullptr || IsIntGroup(r.id)) continue;
    CodecParams p;
    if (r.calib_scale != nullptr) p.scale = 0.37f;  // a calib-style per-tensor scale
    const int block = r.codec().block_elems;
    std::vector<int> lengths;
    for (int n : block > 1 ? blocks : floats) {
      const bool pow2 = (n & (n - 1)) == 0;  // TurboQuant's Hadamard needs a power-of-two row
      if (n % std::max(block, 1) == 0 && (pow2 || r.family != FormatFamily::kTurboQuant)) lengths.push_back(n);
    }
    cases.push_back({&r.codec(), &r.codec_ref(), p, lengths});
  }
  cases.push_back({&Fp8E4M3DynamicCodec(), &Fp8E4M3DynamicCodecRef(), {}, blocks});
  cases.push_back({&Fp8E5M2DynamicCodec(), &Fp8E5M2DynamicCodecRef(), {}, blocks});
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

// Fixed rows of n values (n a multiple of 16) for the golden-byte tests against an engine's own
// quantizer: zeros (with −0), f32 subnormals, one huge outlier, one NaN, one +inf and one −inf among
// Gaussian values, values on the 4-bit grids' rounding ties, and plain Gaussian rows.
inline std::vector<std::vector<float>> EdgeCaseRows(int64_t n) {
  std::vector<std::vector<float>> rows;
  const std::vector<float> g = GaussianRows(6, n, 4242);
  auto gauss = [&](int r) { return std::vector<float>(g.begin() + r * n, g.begin() + (r + 1) * n); };
  rows.push_back(std::vector<float>(n, 0.0f));
  std::vector<float> z(n, 0.0f);
  for (int64_t i = 1; i < n; i += 3) z[i] = -0.0f;
  rows.push_back(z);
  std::vector<float> sub(n);
  for (int64_t i = 0; i < n; ++i) sub[i] = std::ldexp(static_cast<float>((i % 7) - 3), -140);  // f32 subnormals
  rows.push_back(sub);
  std::vector<float> out = gauss(0);
  out[5] = 3.0e4f;
  out[n - 2] = -1.0e-3f;
  rows.push_back(out);
  std::vector<float> nan = gauss(1);
  nan[2] = std::numeric_limits<float>::quiet_NaN();
  rows.push_back(nan);
  std::vector<float> inf = gauss(2);
  inf[7] = std::numeric_limits<float>::infinity();
  inf[n - 1] = -std::numeric_limits<float>::infinity();
  rows.push_back(inf);
  std::vector<float> ties(n);
  constexpr float kTies[16] = {6,      0.25f,  0.75f,  1.25f, 1.75f, 2.5f, 3.5f,   5,
                               -0.25f, -0.75f, -1.25f, -2.5f, -5,    0.5f, -63.5f, 63.5f};
  for (int64_t i = 0; i < n; ++i) ties[i] = kTies[i % 16];
  rows.push_back(ties);
  for (int r = 3; r < 6; ++r) rows.push_back(gauss(r));
  return rows;
}

// The packed bytes of row x [n] (one row: n = x.size()).
inline std::vector<uint8_t> QuantizeRow(const RowCodec& c, const std::vector<float>& x, const CodecParams& p = {}) {
  std::vector<uint8_t> buf(c.row_bytes(static_cast<int64_t>(x.size()), p));
  c.quantize(x.data(), buf.data(), static_cast<int64_t>(x.size()), p);
  return buf;
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
