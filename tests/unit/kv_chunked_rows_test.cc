// Cache storage in chunks: rows written across chunk boundaries read back identically,
// reservations round up to whole chunks and are counted process-wide, and the up-front check of a
// reservation is one line naming the cache, the size and a hint.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kv/store/chunked_rows.h"
#include "kv/store/reservation.h"

namespace kvaudit {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> x(n);
  for (uint8_t& b : x) b = static_cast<uint8_t>(rng());
  return x;
}

TEST(ChunkedRows, RowsAcrossChunkBoundariesReadBackIdentically) {
  constexpr uint64_t kRow = 36;  // a q4_0 row of head_dim 64: not a multiple of 64 bytes
  ChunkedRows rows(kRow);
  const int n = 3 * kCacheChunk + 17;
  const auto data = Bytes(kRow * n, 3);
  for (int t = 0; t < n; t += 100) {  // grown the way Append grows it, 100 rows at a time
    const int m = std::min(100, n - t);
    rows.Grow(t + m);
    for (int i = 0; i < m; ++i) std::memcpy(rows.Row(t + i), data.data() + kRow * (t + i), kRow);
  }
  for (int t = 0; t < n; ++t) ASSERT_EQ(std::memcmp(rows.Row(t), data.data() + kRow * t, kRow), 0) << t;
  // Rows of one chunk are contiguous; RunEnd cuts at the next chunk boundary.
  EXPECT_EQ(rows.Row(kCacheChunk - 1) + kRow, rows.Row(0) + kRow * kCacheChunk);
  EXPECT_EQ(rows.RunEnd(0, n), kCacheChunk);
  EXPECT_EQ(rows.RunEnd(kCacheChunk + 5, n), 2 * kCacheChunk);
  EXPECT_EQ(rows.RunEnd(3 * kCacheChunk, n), n);
  EXPECT_EQ(rows.RunEnd(10, 20), 20);
  // Every chunk start is 64-byte aligned (the SIMD kernels' row loads).
  for (int c = 0; c < 4; ++c) EXPECT_EQ(reinterpret_cast<uintptr_t>(rows.Row(c * kCacheChunk)) % 64, 0u);
}

TEST(ChunkedRows, ReservationRoundsUpToWholeChunks) {
  const uint64_t row = 256, chunk = row * kCacheChunk;
  ChunkedRows rows(row);
  EXPECT_EQ(rows.bytes_reserved(), 0u);  // nothing before the first row
  EXPECT_EQ(rows.BytesFor(1), chunk);
  EXPECT_EQ(rows.BytesFor(kCacheChunk), chunk);
  EXPECT_EQ(rows.BytesFor(kCacheChunk + 1), 2 * chunk);
  ASSERT_TRUE(rows.Reserve(1));
  EXPECT_EQ(rows.bytes_reserved(), chunk);
  EXPECT_EQ(rows.rows_reserved(), kCacheChunk);
  ASSERT_TRUE(rows.Reserve(kCacheChunk + 1));
  EXPECT_EQ(rows.bytes_reserved(), 2 * chunk);
  ASSERT_TRUE(rows.Reserve(10));  // never shrinks
  EXPECT_EQ(rows.bytes_reserved(), 2 * chunk);
  EXPECT_EQ(rows.BytesFor(10), 2 * chunk);  // at least what is held
  rows.Release();
  EXPECT_EQ(rows.bytes_reserved(), 0u);
}

// The chunks one Reserve adds are one allocation: a reserved run's rows are contiguous across chunk
// boundaries (the kernels' prefetch reads ahead into the next chunk); growth past it is not.
TEST(ChunkedRows, OneReservationIsContiguous) {
  ChunkedRows rows(128);  // 128 × 256 = 32 KiB chunks: no padding between them
  ASSERT_TRUE(rows.Reserve(3 * kCacheChunk));
  EXPECT_EQ(rows.Row(3 * kCacheChunk - 1), rows.Row(0) + 128 * (3 * kCacheChunk - 1));
  rows.Grow(3 * kCacheChunk + 1);
  EXPECT_EQ(rows.bytes_reserved(), 4u * 128 * kCacheChunk);
}

TEST(ChunkedRows, OtherChunkSizesAndEmptyRows) {
  ChunkedRows groups(64 * 8, 4);  // KIVI keys: 4 groups per chunk
  ASSERT_TRUE(groups.Reserve(5));
  EXPECT_EQ(groups.bytes_reserved(), 2u * 4 * 64 * 8);
  EXPECT_EQ(groups.RunEnd(5, 100), 8);
  ChunkedRows none(0);  // a store without outlier channels: never allocates
  ASSERT_TRUE(none.Reserve(1 << 30));
  EXPECT_EQ(none.bytes_reserved(), 0u);
  EXPECT_EQ(none.BytesFor(1 << 30), 0u);
}

TEST(ChunkedRows, HeldBytesAreCountedForTheProcessAndMoveWithTheRows) {
  const uint64_t before = ChunkedRowsBytesHeld();
  {
    ChunkedRows a(128);
    ASSERT_TRUE(a.Reserve(2 * kCacheChunk));
    EXPECT_EQ(ChunkedRowsBytesHeld(), before + a.bytes_reserved());
    ChunkedRows b = std::move(a);  // moved, not copied: counted once
    EXPECT_EQ(ChunkedRowsBytesHeld(), before + b.bytes_reserved());
    EXPECT_EQ(b.bytes_reserved(), 2u * 128 * kCacheChunk);
  }
  EXPECT_EQ(ChunkedRowsBytesHeld(), before);
}

TEST(KvReservation, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(2048), "2.0 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(FormatBytes(uint64_t{16} << 40), "16.0 TiB");
}

TEST(KvReservation, CheckIsOneLineWithSizeWhatAndHint) {
  const uint64_t gib = uint64_t{1} << 30;
  EXPECT_TRUE(CheckKvStorage(131072, 32 * gib, 0, "k=f32,v=f32: 32 layers × 8 KV heads", 64 * gib, 0).ok());
  // Only what is not held yet has to fit; what other caches hold in chunks counts as taken.
  EXPECT_TRUE(CheckKvStorage(131072, 32 * gib, 30 * gib, "x", 4 * gib, 0).ok());
  EXPECT_FALSE(CheckKvStorage(131072, 32 * gib, 30 * gib, "x", 4 * gib, 3 * gib).ok());
  const Status s = CheckKvStorage(131072, 32 * gib, 0, "k=f32,v=f32: 32 layers × 8 KV heads", 21 * gib, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().exit_code(), 2);
  const std::string& m = s.error().message;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(
      m.find("KV cache for 131072 tokens needs 32.0 GiB (k=f32,v=f32: 32 layers × 8 KV heads, 256.0 KiB per token)"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("21.0 GiB of memory is available"), std::string::npos) << m;
  EXPECT_NE(m.find("hint: "), std::string::npos) << m;
}

TEST(KvReservation, AllocationFailureIsAnErrorNotAnAbort) {
  const Status s = ReserveKvStorage(10, 1024, 0, "test cache", [] { return false; });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("and the allocation failed"), std::string::npos) << s.error().message;
  bool called = false;
  const Status big = ReserveKvStorage(1 << 30, uint64_t{1} << 62, 0, "test cache", [&] { return called = true; });
  EXPECT_FALSE(big.ok());
  EXPECT_FALSE(called) << "checked before anything is allocated";
}

}  // namespace
}  // namespace kvaudit
