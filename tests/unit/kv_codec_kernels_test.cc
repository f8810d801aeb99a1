// kv/formats/codec_kernels.h for every row codec on every kernel path this CPU has
// (codec_checks::ForEachPath): the AVX-512 kernels equal their scalar twins bit for bit (where the
// path has both: codec_checks::TwoKernelPaths), the dot is the canonical dot of q with the
// dequantized row, and the multi-row / multi-query forms (what attention runs) equal the
// single-row kernels bit for bit whatever the row and query counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "unit/kv_codec_checks.h"
#include "ops/dot.h"

namespace kvaudit {
namespace {

using codec_checks::AllCodecs;
using codec_checks::Case;

std::string Name(const Case& c, int n) {
  return std::string(c.simd->name) + " n=" + std::to_string(n) + " group=" + std::to_string(c.params.group);
}

// [rows, row_bytes] packed rows of Gaussian data with a few 50× channels.
std::vector<uint8_t> PackRows(const Case& c, int rows, int n, uint64_t seed) {
  const std::vector<float> x = codec_checks::OutlierRows(rows, n, seed);
  const uint64_t rb = c.simd->row_bytes(n, c.params);
  std::vector<uint8_t> packed(rb * rows);
  for (int r = 0; r < rows; ++r)
    c.simd->quantize(x.data() + static_cast<int64_t>(r) * n, packed.data() + rb * r, n, c.params);
  return packed;
}

TEST(CodecKernels, SimdEqualsScalarTwinAndCanonicalDotOfDequantizedRow) {
  codec_checks::ForEachPath([] {
    for (const Case& c : AllCodecs()) {
      const bool two_paths = codec_checks::TwoKernelPaths(*c.simd, *c.ref);
      for (int n : c.lengths) {
        const int rows = 9;
        const std::vector<uint8_t> packed = PackRows(c, rows, n, 11 + n);
        const uint64_t rb = c.simd->row_bytes(n, c.params);
        const std::vector<float> q = codec_checks::GaussianRows(rows, n, 99 + n);
        std::vector<float> y(n);
        for (int r = 0; r < rows; ++r) {
          const uint8_t* row = packed.data() + rb * r;
          const float* qr = q.data() + static_cast<int64_t>(r) * n;
          c.simd->dequantize(row, y.data(), n, c.params);
          const float canonical = DotCanonicalScalar(qr, static_cast<const float*>(y.data()), n);
          const float s = c.simd->dot(row, qr, n, c.params);
          if (two_paths) {
            const float f = c.ref->dot(row, qr, n, c.params);
            ASSERT_EQ(std::memcmp(&s, &f, 4), 0) << Name(c, n) << " row " << r << ": " << s << " vs " << f;
          }
          ASSERT_EQ(std::memcmp(&s, &canonical, 4), 0) << Name(c, n) << " row " << r;
          std::vector<float> a(qr, qr + n), b(qr, qr + n);  // [n] accumulators
          const float w = 0.3f - 0.07f * r;
          c.simd->axpy(row, w, a.data(), n, c.params);
          if (two_paths) c.ref->axpy(row, w, b.data(), n, c.params);
          for (int i = 0; i < n; ++i) {
            if (two_paths) {
              ASSERT_EQ(a[i], b[i]) << Name(c, n) << " axpy row " << r << " i " << i;
            }
            ASSERT_EQ(a[i], std::fma(y[i], w, qr[i])) << Name(c, n) << " axpy row " << r << " i " << i;
          }
        }
      }
    }
  });
}

TEST(CodecKernels, RowsAndQueriesAtOnceAreBitIdenticalToOneAtATime) {
  codec_checks::ForEachPath([] {
    for (const Case& c : AllCodecs()) {
      // The active path's kernels and, where they differ, the scalar twins.
      std::vector<const RowCodec*> paths = {c.simd};
      if (codec_checks::TwoKernelPaths(*c.simd, *c.ref)) paths.push_back(c.ref);
      for (int n : c.lengths) {
        const int max_rows = 37, max_q = 9;
        const std::vector<uint8_t> packed = PackRows(c, max_rows, n, 7 + n);
        const uint64_t rb = c.simd->row_bytes(n, c.params);
        const int64_t q_stride = n + 3;  // strided queries and weights, as attention passes them
        const std::vector<float> q = codec_checks::GaussianRows(max_q, q_stride, 5 + n);
        const std::vector<float> w = codec_checks::GaussianRows(max_q, max_rows + 2, 6 + n);
        for (const RowCodec* k : paths) {
          for (int n_rows : {1, 2, 3, 16, 17, 37}) {
            for (int n_q : {1, 2, 3, 4, 5, 8, 9}) {
              const int64_t out_stride = n_rows + 1;
              std::vector<float> out(static_cast<size_t>(n_q) * out_stride, -1.0f);  // [n_q, out_stride]
              k->dot_rows(packed.data(), rb, n_rows, q.data(), q_stride, n_q, n, out.data(), out_stride, c.params);
              for (int j = 0; j < n_q; ++j) {
                for (int r = 0; r < n_rows; ++r) {
                  const float one = k->dot(packed.data() + rb * r, q.data() + j * q_stride, n, c.params);
                  ASSERT_EQ(std::memcmp(&one, &out[j * out_stride + r], 4), 0)
                      << Name(c, n) << " dot_rows rows " << n_rows << " q " << n_q << " (" << j << "," << r << ")";
                }
              }
              const int64_t acc_stride = n + 5, w_stride = max_rows + 2;
              std::vector<float> multi = codec_checks::GaussianRows(n_q, acc_stride, 3 + n_rows);  // [n_q, acc_stride]
              std::vector<float> single = multi;
              k->axpy_rows(packed.data(), rb, n_rows, w.data(), w_stride, n_q, multi.data(), acc_stride, n, c.params);
              for (int r = 0; r < n_rows; ++r) {
                for (int j = 0; j < n_q; ++j) {
                  k->axpy(packed.data() + rb * r, w[j * w_stride + r], single.data() + j * acc_stride, n, c.params);
                }
              }
              ASSERT_EQ(0, std::memcmp(multi.data(), single.data(), sizeof(float) * multi.size()))
                  << Name(c, n) << " axpy_rows rows " << n_rows << " w " << n_q;
            }
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace kvaudit
