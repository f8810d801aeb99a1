// The bits of every ggml block format's arithmetic, pinned by hash: the reference dequantizer of
// each of the 13 block types (random bytes: every scale pattern, NaN and inf included), the packed
// matmul on each (decode n = 1 and a prefill tile n = 5, finite scales), and the expanded codes
// llama.cpp's integer dot reads (BlockCodes) for each KV cache block type. These were committed
// before the block definitions moved into one layer (src/quant), so that move, and any later one,
// must leave them unchanged. CI runs the unit suite on every kernel path: the packed matmul's
// constants passing on each is its cross-path equality.
//
// Regenerating (only after an intended change of a format's arithmetic, which also changes every
// result file that reads such weights): run on an AVX-512 machine
//   build/release/tests/kvaudit_unit_tests --gtest_filter='QuantBlockBits.*'
// and copy the `{"name", 0x...},` lines that the failures print into kExpected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "kv/formats/format_table.h"
#include "quant/dequantize.h"
#include "ops/matmul.h"
#include "ops/weight_matrix.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

// FNV-1a over bytes.
uint64_t Fnv(const void* p, size_t bytes, uint64_t h = 0xcbf29ce484222325ULL) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

const std::map<std::string, uint64_t> kExpected = {
    {"dequantize_ref/q4_0", 0x194d2c8c2dc34142ULL},
    {"dequantize_ref/q4_1", 0x55933d005572cae3ULL},
    {"dequantize_ref/q5_0", 0xb5a56e9e09b4084aULL},
    {"dequantize_ref/q5_1", 0x6a48ca11df7bb12eULL},
    {"dequantize_ref/q8_0", 0xb6188209243afe37ULL},
    {"dequantize_ref/q2_K", 0x4f3212317b3724d7ULL},
    {"dequantize_ref/q3_K", 0x44417be58bccb66fULL},
    {"dequantize_ref/q4_K", 0xf619f26fbda99465ULL},
    {"dequantize_ref/q5_K", 0x2ea4eb9a25b1f0d7ULL},
    {"dequantize_ref/q6_K", 0x3a93421fa59cc1fdULL},
    {"dequantize_ref/iq4_nl", 0x6a069e31e2a33fd5ULL},
    {"dequantize_ref/iq4_xs", 0x843d11e44a911b05ULL},
    {"dequantize_ref/mxfp4", 0xe17172b1b797b9ecULL},
    {"matmul/q4_0", 0x06c1b5ad9da16e18ULL},
    {"matmul/q4_1", 0x3f1ba200a02de2e9ULL},
    {"matmul/q5_0", 0xce731fb893a3d47aULL},
    {"matmul/q5_1", 0xac6961aa5e7977dfULL},
    {"matmul/q8_0", 0x9dc74bf3e02bc43dULL},
    {"matmul/q2_K", 0xc3b14b11dc600973ULL},
    {"matmul/q3_K", 0x22a3096bcd2b528dULL},
    {"matmul/q4_K", 0xc25cf50ed4d44a0dULL},
    {"matmul/q5_K", 0xd2d9096d4864c9f5ULL},
    {"matmul/q6_K", 0x3bb3f9c464b62b3eULL},
    {"matmul/iq4_nl", 0xf7a2beef07731bbbULL},
    {"matmul/iq4_xs", 0x12e398de574f1d60ULL},
    {"matmul/mxfp4", 0x0d2fe9dcb37cce17ULL},
    {"codes/q8_0", 0x6667ca8900905072ULL},
    {"codes/q4_0", 0xd1a4d8bece4fbf33ULL},
    {"codes/q4_1", 0x620167429fe672b9ULL},
    {"codes/q5_0", 0x203628705637a897ULL},
    {"codes/q5_1", 0xcab4e7ed40aaa8b9ULL},
    {"codes/iq4_nl", 0x8355c30c627e2ccdULL},
};

void ExpectHash(const std::string& name, uint64_t h) {
  char line[96];
  std::snprintf(line, sizeof line, "{\"%s\", 0x%016llxULL},", name.c_str(), static_cast<unsigned long long>(h));
  const auto it = kExpected.find(name);
  ASSERT_NE(it, kExpected.end()) << "no committed hash; add: " << line;
  EXPECT_EQ(it->second, h) << name << ": the bits differ from the committed ones; got " << line;
}

std::vector<QuantType> BlockTypes() {
  std::vector<QuantType> types;
  for (int i = 0; i < kNumQuantTypes; ++i) {
    if (IsBlockType(static_cast<QuantType>(i))) types.push_back(static_cast<QuantType>(i));
  }
  return types;
}

TEST(QuantBlockBits, ReferenceDequantizers) {
  for (QuantType t : BlockTypes()) {
    const QuantTraits& info = GetQuantTraits(t);
    const int64_t n = 8 * info.block_elems;
    const std::vector<uint8_t> bytes = testing::RandomBytes(8 * info.block_bytes, 11 + static_cast<int>(t));
    std::vector<float> y(static_cast<size_t>(n));  // [n]
    DequantizeBlocksRef(t, bytes.data(), y.data(), n);
    ExpectHash(std::string("dequantize_ref/") + info.name, Fnv(y.data(), y.size() * sizeof(float)));
  }
}

TEST(QuantBlockBits, PackedMatMul) {
  constexpr int64_t kRows = 37, kN = 5;
  ThreadPool pool(2);
  for (QuantType t : BlockTypes()) {
    const QuantTraits& info = GetQuantTraits(t);
    const int64_t cols = 2 * 256;
    WeightMatrix w;
    w.Resize(kRows, cols, t);
    const std::vector<uint8_t> bytes = testing::RandomBytes(static_cast<int64_t>(w.bytes()), 40 + static_cast<int>(t));
    std::memcpy(w.mutable_row(0), bytes.data(), bytes.size());
    const std::vector<float> scales = testing::NormalRows(1, 4 * kRows * cols / info.block_elems, 60, 0.01f);
    size_t s = 0;
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t b = 0; b < cols / info.block_elems; ++b) {
        for (int off : F16Fields(t)) {
          const uint16_t h = F32ToF16(scales[s++]);
          std::memcpy(w.mutable_row(r) + b * info.block_bytes + off, &h, 2);
        }
        if (E8M0Field(t) >= 0) {  // mxfp4: the power of two of the scale's magnitude
          const float v = scales[s++];
          w.mutable_row(r)[b * info.block_bytes + E8M0Field(t)] =
              static_cast<uint8_t>(v == 0.0f ? 0 : 128 + std::ilogb(v));
        }
      }
    }
    const std::vector<float> x = testing::UniformRows(kN, cols, 70);  // [kN, cols]
    std::vector<float> y(kN * kRows), gemv(kRows);                    // [kN, kRows], [kRows]
    MatMul(x.data(), kN, w.view(), y.data(), pool);
    MatMul(x.data(), 1, w.view(), gemv.data(), pool);
    ExpectHash(std::string("matmul/") + info.name,
               Fnv(gemv.data(), gemv.size() * sizeof(float), Fnv(y.data(), y.size() * sizeof(float))));
  }
}

TEST(QuantBlockBits, ExpandedCodes) {
  for (const FormatRow& f : FormatTable()) {
    if (f.ggml == nullptr || f.ggml().to_codes == nullptr) continue;
    const ggml::GgmlType& type = f.ggml();
    constexpr int64_t n = 256;
    std::vector<uint8_t> row(f.codec().row_bytes(n, CodecParams{}));  // [row bytes of n]
    const std::vector<float> x = testing::NormalRows(1, n, 80 + static_cast<int>(f.id));
    type.from_float(x.data(), row.data(), n);
    std::vector<int8_t> codes(n);             // [n]
    std::vector<float> d(n / 32), m(n / 32);  // [n / 32] each
    type.to_codes(row.data(), n, ggml::BlockCodes{codes.data(), d.data(), m.data()});
    uint64_t h = Fnv(row.data(), row.size());
    h = Fnv(codes.data(), codes.size(), h);
    h = Fnv(d.data(), d.size() * sizeof(float), h);
    if (type.vec_dot == ggml::VecDotKind::kAffine) h = Fnv(m.data(), m.size() * sizeof(float), h);
    ExpectHash(std::string("codes/") + std::string(f.name), h);
  }
}

}  // namespace
}  // namespace kvaudit
