// Matmul on weights kept in a ggml block format: bitwise the matmul of the same matrix dequantized
// to f32 first (the dequantize-at-load path), for decode (n = 1) and prefill tiles, any thread
// count, matrices of several parts (q|k|v of different types) and row maps (GGUF Q/K rows).
#include <gtest/gtest.h>

#include "base/isa.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "quant/dequantize.h"
#include "ops/matmul.h"
#include "ops/weight_matrix.h"
#include "support/random_rows.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit {
namespace {

// The types whose reference dequantizer exists (all of them once quant/dequantize.cc has them).
std::vector<QuantType> BlockTypes() {
  std::vector<QuantType> types;
  for (int i = 0; i < kNumQuantTypes; ++i) {
    const QuantType t = static_cast<QuantType>(i);
    if (IsBlockType(t)) types.push_back(t);
  }
  return types;
}

std::vector<float> ToF32(const WeightView& w) {
  std::vector<float> f(static_cast<size_t>(w.rows * w.cols));  // [rows, cols]
  WeightRowsToF32Ref(w, 0, w.rows, f.data());
  return f;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(OpsPackedMatmul, EqualsMatmulOnDequantizedMatrix) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    ThreadPool p1(1), p2(2);
    for (QuantType t : BlockTypes()) {
      // 256-element blocks: 2 chunks of the decode kernels' 256; 32-element: under one chunk, and
      // a chunk and a part (320).
      const bool k_family = GetQuantTraits(t).block_elems == 256;
      for (int64_t cols : k_family ? std::vector<int64_t>{512} : std::vector<int64_t>{96, 320}) {
        for (int64_t out : {1, 5, 16, 37, 70}) {
          const WeightMatrix w = testing::RandomBlockMatrix(out, cols, t, 17 + static_cast<uint32_t>(out));
          const std::vector<float> wf = ToF32(w.view());
          const WeightView f32{wf.data(), QuantType::kF32, out, cols};
          std::vector<float> rows(static_cast<size_t>(out * cols));
          WeightRowsToF32(w.view(), 0, out, rows.data());
          EXPECT_TRUE(SameBits(rows, wf)) << QuantTypeName(t) << ": WeightRowsToF32 differs from the reference";
          for (int64_t n : {1, 2, 5, 9}) {
            const std::vector<float> x = testing::NormalRows(n, cols, 3);
            std::vector<float> want(n * out), got1(n * out), got2(n * out), canon(n * out);
            MatMul(x.data(), n, f32, want.data(), p1);
            MatMul(x.data(), n, w.view(), got1.data(), p1);
            MatMul(x.data(), n, w.view(), got2.data(), p2);
            MatMulCanonicalRef(x.data(), n, w.view(), canon.data());
            EXPECT_TRUE(SameBits(got1, want)) << QuantTypeName(t) << " cols " << cols << " out " << out << " n " << n;
            EXPECT_TRUE(SameBits(got2, want))
                << QuantTypeName(t) << " 2 threads, cols " << cols << " out " << out << " n " << n;
            EXPECT_TRUE(SameBits(canon, want)) << QuantTypeName(t) << " canonical ref, out " << out << " n " << n;
            // A row of a prefill is bitwise the same token decoded alone.
            std::vector<float> single(out);
            MatMul(x.data() + (n - 1) * cols, 1, w.view(), single.data(), p2);
            EXPECT_EQ(std::memcmp(single.data(), got1.data() + (n - 1) * out, out * sizeof(float)), 0)
                << QuantTypeName(t);
          }
        }
      }
    }
  });
}

TEST(OpsPackedMatmul, PartsAndRowMapsEqualTheAssembledF32Matrix) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    ThreadPool pool(2);
    const int64_t cols = 256;
    const WeightMatrix q = testing::RandomBlockMatrix(64, cols, QuantType::kQ4_K, 5);
    const WeightMatrix k = testing::RandomBlockMatrix(24, cols, QuantType::kQ6_K, 6);
    const WeightMatrix v = testing::RandomWeights(40, cols, QuantType::kF16, 7);
    std::vector<int32_t> reversed(64);
    for (int i = 0; i < 64; ++i) reversed[i] = 63 - i;
    WeightMatrix fused;
    fused.AddExternalPart(q.view(), reversed);
    fused.AddExternalPart(k.view());
    fused.AddExternalPart(v.view());
    ASSERT_EQ(fused.rows(), 128);
    EXPECT_TRUE(fused.mixed());
    EXPECT_EQ(fused.bytes(), q.bytes() + k.bytes() + v.bytes());
    // The same matrix as one f32 block: q's rows reversed, then k, then v.
    std::vector<float> all;
    const std::vector<float> qf = ToF32(q.view()), kf = ToF32(k.view()), vf = ToF32(v.view());
    for (int i = 0; i < 64; ++i) all.insert(all.end(), qf.begin() + (63 - i) * cols, qf.begin() + (64 - i) * cols);
    all.insert(all.end(), kf.begin(), kf.end());
    all.insert(all.end(), vf.begin(), vf.end());
    const WeightView f32{all.data(), QuantType::kF32, 128, cols};
    for (int64_t n : {1, 3, 8}) {
      const std::vector<float> x = testing::NormalRows(n, cols, 11);
      std::vector<float> want(n * 128), got(n * 128);
      MatMul(x.data(), n, f32, want.data(), pool);
      MatMul(x.data(), n, fused, got.data(), pool);
      EXPECT_TRUE(SameBits(got, want)) << "n " << n;
    }
  });
}

TEST(OpsPackedMatmul, SpecialScalesDecodeAsTheReference) {
  // f16 scales of every class, where the decode kernels convert 16 rows' scales at once
  // (ops/gemv_blocks.cc) and the K family per block, and E8M0 scales at both ends (mxfp4): each
  // gemv output is the f32 matrix's bits (or NaN where that is NaN: a NaN weight's payload is not
  // part of the contract).
  const uint16_t specials[] = {0x0001, 0x83FF, 0x8000, 0x0000, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0x7D01};
  // E8M0 (mxfp4): subnormal d (0, 1), the smallest normal (2), and d = 2^126, 2^127 (inf weights).
  const uint8_t e8m0_specials[] = {0, 1, 2, 254, 255};
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    ThreadPool pool(2);
    for (QuantType t : BlockTypes()) {
      const QuantTraits& info = GetQuantTraits(t);
      const int64_t cols = info.block_elems == 256 ? 512 : 96, rows = 40;
      WeightMatrix w = testing::RandomBlockMatrix(rows, cols, t, 23);
      size_t k = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t b = 0; b < cols / info.block_elems; ++b) {
          if ((r * 7 + b) % 3 != 0) continue;
          for (int off : F16Fields(t))
            std::memcpy(w.mutable_row(r) + b * info.block_bytes + off, &specials[k++ % 9], 2);
          if (E8M0Field(t) >= 0) w.mutable_row(r)[b * info.block_bytes + E8M0Field(t)] = e8m0_specials[k++ % 5];
        }
      }
      const std::vector<float> wf = ToF32(w.view());
      const WeightView f32{wf.data(), QuantType::kF32, rows, cols};
      const std::vector<float> x = testing::NormalRows(1, cols, 29);
      std::vector<float> want(rows), got(rows);
      MatMul(x.data(), 1, f32, want.data(), pool);
      MatMul(x.data(), 1, w.view(), got.data(), pool);
      int finite = 0;
      for (int64_t r = 0; r < rows; ++r) {
        if (std::isnan(want[r])) {
          EXPECT_TRUE(std::isnan(got[r])) << QuantTypeName(t) << " row " << r;
        } else {
          finite += std::isfinite(want[r]) ? 1 : 0;
          EXPECT_EQ(std::memcmp(&got[r], &want[r], sizeof(float)), 0)
              << QuantTypeName(t) << " row " << r << ": " << got[r] << " vs " << want[r];
        }
      }
      EXPECT_GT(finite, rows / 4) << QuantTypeName(t) << ": most rows should stay finite";
    }
  });
}

TEST(OpsPackedMatmul, BlockRowsMustBeWholeBlocks) {
  WeightMatrix w;
  EXPECT_DEATH(w.Resize(2, 48, QuantType::kQ8_0), "whole number of blocks");
}

}  // namespace
}  // namespace kvaudit
