// DequantizeBlocks (the SIMD twin of this build's matmul ISA) against DequantizeBlocksRef, bit for
// bit, for every block type: random blocks whose f16 scale fields hold finite values of every
// magnitude (subnormals, zeros of both signs, negatives, non-powers of two; E8M0 scales are random
// bytes, every one of them in quant_mxfp4_test), rows of 1, 2 and 7
// blocks, at source addresses off by 0..3 bytes. A build without SIMD twins compares the reference
// with itself; the AVX2 and AVX-512 builds each run their own path here.
#include "quant/dequantize.h"

#include <gtest/gtest.h>

#include "base/isa.h"

#include <cstring>
#include <span>
#include <vector>

#include "support/random_rows.h"

namespace kvaudit {
namespace {

// A finite f16: random bits with an exponent field below 31; every 5th a signed zero.
uint16_t FiniteF16(testing::Rng& rng, int i) {
  if (i % 5 == 3) return i % 2 ? 0x8000 : 0x0000;
  uint16_t h = static_cast<uint16_t>(rng.NextU64());
  if ((h & 0x7C00) == 0x7C00) h = static_cast<uint16_t>(h & ~0x4000);  // exponent 31 -> 15: a normal value
  return h;
}

// Checks DequantizeBlocks == DequantizeBlocksRef bitwise on `bytes` (n elements at byte `offset`).
void ExpectBitwiseEqual(QuantType t, const std::vector<uint8_t>& bytes, int offset, int64_t n) {
  std::vector<float> ref(static_cast<size_t>(n)), simd(static_cast<size_t>(n));
  std::memset(ref.data(), 0x7F, ref.size() * 4);  // different NaN fills: a skipped element shows
  std::memset(simd.data(), 0xFF, simd.size() * 4);
  DequantizeBlocksRef(t, bytes.data() + offset, ref.data(), n);
  DequantizeBlocks(t, bytes.data() + offset, simd.data(), n);
  if (std::memcmp(ref.data(), simd.data(), ref.size() * 4) == 0) return;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t a, b;
    std::memcpy(&a, &ref[i], 4);
    std::memcpy(&b, &simd[i], 4);
    if (a != b) {
      ADD_FAILURE() << QuantTypeName(t) << " element " << i << " of " << n << " (offset " << offset << "): ref "
                    << ref[i] << " (0x" << std::hex << a << ") simd " << simd[i] << " (0x" << b << ")";
      return;
    }
  }
}

TEST(QuantDequantize, SimdMatchesReferenceBitwise) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    int tested = 0;
    for (int ti = 0; ti < kNumQuantTypes; ++ti) {
      const auto t = static_cast<QuantType>(ti);
      if (!IsBlockType(t)) continue;
      const QuantTraits& info = GetQuantTraits(t);
      // E8M0 scales (mxfp4) stay random: every byte is a finite scale (the largest give inf weights,
      // the same bits on every path).
      const std::span<const int> scale_offsets = F16Fields(t);
      ASSERT_TRUE(!scale_offsets.empty() || E8M0Field(t) >= 0) << info.name;
      for (const int n_blocks : {1, 2, 7}) {
        for (int offset = 0; offset < 4; ++offset) {
          const uint64_t seed = 1000u * static_cast<uint64_t>(ti) + 10u * static_cast<uint64_t>(n_blocks) + offset;
          std::vector<uint8_t> bytes = testing::RandomBytes(offset + int64_t{n_blocks} * info.block_bytes, seed);
          testing::Rng rng(seed);
          int field = 0;
          for (int blk = 0; blk < n_blocks; ++blk) {
            for (const int off : scale_offsets) {
              const uint16_t h = FiniteF16(rng, field++);
              std::memcpy(&bytes[offset + blk * info.block_bytes + off], &h, 2);
            }
          }
          ExpectBitwiseEqual(t, bytes, offset, int64_t{n_blocks} * info.block_elems);
          ++tested;
        }
      }
    }
    EXPECT_EQ(tested, (kNumQuantTypes - 3) * 3 * 4);
  });
}

// Every f16 bit pattern as a q8_0 scale, NaNs and infinities included: the twin's f16 conversion
// (hardware, with a fallback for exponent 31) is bitwise F16ToF32, signaling-NaN payloads too.
TEST(QuantDequantize, EveryF16ScaleQ8_0) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    constexpr int kBlocks = 65536;
    std::vector<uint8_t> bytes = testing::RandomBytes(int64_t{kBlocks} * 34, 7);
    for (int h = 0; h < kBlocks; ++h) {
      const uint16_t v = static_cast<uint16_t>(h);
      std::memcpy(&bytes[34 * static_cast<size_t>(h)], &v, 2);
    }
    ExpectBitwiseEqual(QuantType::kQ8_0, bytes, 0, int64_t{kBlocks} * 32);
  });
}

// Extreme codes: all-zero and all-one bytes (every bit field at its minimum / maximum).
TEST(QuantDequantize, ExtremeCodes) {
  // every kernel path this CPU runs (base/isa.h), each against the same reference
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    for (int ti = 0; ti < kNumQuantTypes; ++ti) {
      const auto t = static_cast<QuantType>(ti);
      if (!IsBlockType(t)) continue;
      const QuantTraits& info = GetQuantTraits(t);
      for (const uint8_t fill : {uint8_t{0x00}, uint8_t{0xFF}}) {
        std::vector<uint8_t> bytes(static_cast<size_t>(2 * info.block_bytes), fill);
        for (int blk = 0; blk < 2; ++blk) {
          for (const int off : F16Fields(t)) {
            const uint16_t h = blk ? 0xB555 : 0x2E66;  // -0.333..., 0.1
            std::memcpy(&bytes[blk * info.block_bytes + off], &h, 2);
          }
        }
        ExpectBitwiseEqual(t, bytes, 0, 2 * info.block_elems);
      }
    }
  });
}

}  // namespace
}  // namespace kvaudit
