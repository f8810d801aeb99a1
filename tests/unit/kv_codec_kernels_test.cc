// kv/formats/codec_kernels.h for every row codec: the AVX-512 kernels equal their scalar twins bit for bit,
// the dot is the canonical dot of q with the dequantized row, and the multi-row / multi-query forms
// (what attention runs) equal the single-row kernels bit for bit whatever the row and query counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kv/formats/bf16.h"
#include "kv/formats/f16.h"
#include "kv/formats/f32.h"
#include "kv/formats/fp8.h"
#include "kv/formats/int_group.h"
#include "kv/formats/iq4_nl.h"
#include "kv/formats/q4_0.h"
#include "kv/formats/q4_1.h"
#include "kv/formats/q5_0.h"
#include "kv/formats/q5_1.h"
#include "kv/formats/q8_0.h"
#include "kv_codec_checks.h"
#include "ops/dot.h"

namespace kvaudit {
namespace {

struct Case {
  const RowCodec* simd;
  const RowCodec* ref;
  CodecParams params;
  std::vector<int> lengths;  // row lengths to test
};

std::vector<Case> AllCodecs() {
  const std::vector<int> blocks = {32, 64, 96, 128, 256};
  const std::vector<int> floats = {8, 16, 40, 64, 80, 128};  // 8, 40: not multiples of 16 (fallback path)
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

std::string Name(const Case& c, int n) {
  return std::string(c.simd->name) + " n=" + std::to_string(n) + " group=" + std::to_string(c.params.group);
}

// [rows, row_bytes] packed rows of Gaussian data with a few 50× channels.
std::vector<uint8_t> PackRows(const Case& c, int rows, int n, uint64_t seed) {
  const std::vector<float> x = codec_checks::OutlierRows(rows, n, seed);
  const uint64_t rb = c.simd->row_bytes(n, c.params);
  std::vector<uint8_t> packed(rb * rows);
  for (int r = 0; r < rows; ++r) c.simd->quantize(x.data() + static_cast<int64_t>(r) * n, packed.data() + rb * r, n, c.params);
  return packed;
}

TEST(CodecKernels, SimdEqualsScalarTwinAndCanonicalDotOfDequantizedRow) {
  for (const Case& c : AllCodecs()) {
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
        const float s = c.simd->dot(row, qr, n, c.params), f = c.ref->dot(row, qr, n, c.params);
        ASSERT_EQ(std::memcmp(&s, &f, 4), 0) << Name(c, n) << " row " << r << ": " << s << " vs " << f;
        ASSERT_EQ(std::memcmp(&s, &canonical, 4), 0) << Name(c, n) << " row " << r;
        std::vector<float> a(qr, qr + n), b(qr, qr + n);  // [n] accumulators
        const float w = 0.3f - 0.07f * r;
        c.simd->axpy(row, w, a.data(), n, c.params);
        c.ref->axpy(row, w, b.data(), n, c.params);
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(a[i], b[i]) << Name(c, n) << " axpy row " << r << " i " << i;
          ASSERT_EQ(a[i], std::fma(y[i], w, qr[i])) << Name(c, n) << " axpy row " << r << " i " << i;
        }
      }
    }
  }
}

TEST(CodecKernels, RowsAndQueriesAtOnceAreBitIdenticalToOneAtATime) {
  for (const Case& c : AllCodecs()) {
    for (int n : c.lengths) {
      const int max_rows = 37, max_q = 9;
      const std::vector<uint8_t> packed = PackRows(c, max_rows, n, 7 + n);
      const uint64_t rb = c.simd->row_bytes(n, c.params);
      const int64_t q_stride = n + 3;  // strided queries and weights, as attention passes them
      const std::vector<float> q = codec_checks::GaussianRows(max_q, q_stride, 5 + n);
      const std::vector<float> w = codec_checks::GaussianRows(max_q, max_rows + 2, 6 + n);
      for (const RowCodec* k : {c.simd, c.ref}) {
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
}

}  // namespace
}  // namespace kvaudit
