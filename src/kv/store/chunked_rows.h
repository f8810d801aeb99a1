// Cache storage that follows use (docs/architecture.md "Cache memory"): rows of a fixed byte width
// kept in chunks of a fixed number of rows, each chunk allocated when the first of its rows is
// reserved or appended. Rows never move, so a chunk's base pointer stays valid while the store
// lives; a chunk of kCacheChunk positions holds exactly the keys of one attention chunk
// (kv/attention/chunked_attention.h cuts keys at the same absolute boundaries), so every kernel
// call reads one chunk with the arithmetic and bits it had over a contiguous [max_pos, row] array.
//
// Why chunks and not one buffer grown by copy: a copy needs the old and the new buffer at once
// (2x the cache at the moment it is largest, e.g. 64 GiB for an 8B model's 32 GiB f32 cache at
// 128k) and rewrites every byte on each growth; chunks cost one pointer per 256 positions and are
// never copied. The chunks one Reserve adds come from one allocation, so a run that reserves what
// it will use (every kvaudit command) has its rows contiguous as before and the kernels' prefetch
// runs across chunk boundaries (one allocation per chunk made q4_0 decode attention 7% slower);
// Append past the reservation adds chunks one by one. Chunks are not zero-filled (every row is
// written before any kernel reads it), so reserved but unwritten chunks stay virtual memory until
// Append writes them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"

namespace kvaudit {

inline constexpr int kCacheChunk = 256;  // positions per chunk of every cache

class ChunkedRows {
 public:
  ChunkedRows() = default;
  // row_bytes may be 0 (nothing is ever allocated); rows_per_chunk must be a power of two.
  explicit ChunkedRows(uint64_t row_bytes, int rows_per_chunk = kCacheChunk);
  ~ChunkedRows();
  ChunkedRows(ChunkedRows&& other) noexcept;
  ChunkedRows& operator=(ChunkedRows&& other) noexcept;
  ChunkedRows(const ChunkedRows&) = delete;
  ChunkedRows& operator=(const ChunkedRows&) = delete;

  // Chunks for rows [0, n_rows) allocated (what was held before is kept). False when an allocation
  // failed; the chunks allocated until then are kept.
  [[nodiscard]] bool Reserve(int64_t n_rows);
  // Reserve for Append: rows past the caller's reservation grow the store chunk by chunk; an
  // allocation failure here is fatal, since KvCache::Reserve is where a run learns what it can hold.
  void Grow(int64_t n_rows) {
    KV_CHECK_MSG(Reserve(n_rows), "out of memory growing the KV cache past its reservation");
  }
  void Release();  // frees every chunk

  uint8_t* Row(int64_t t) { return const_cast<uint8_t*>(static_cast<const ChunkedRows*>(this)->Row(t)); }
  const uint8_t* Row(int64_t t) const {
    const uint64_t c = static_cast<uint64_t>(t) >> shift_;
    KV_CHECK(t >= 0 && c < chunks_.size());
    return chunks_[c] + (static_cast<uint64_t>(t) & (rows_per_chunk_ - 1)) * row_bytes_;
  }
  // The end (<= t1) of the run of rows from t that lies in t's chunk: rows [t, RunEnd) are contiguous.
  int64_t RunEnd(int64_t t, int64_t t1) const {
    const int64_t end = ((t >> shift_) + 1) << shift_;
    return end < t1 ? end : t1;
  }

  uint64_t row_bytes() const { return row_bytes_; }
  int rows_per_chunk() const { return rows_per_chunk_; }
  int64_t rows_reserved() const { return static_cast<int64_t>(chunks_.size()) * rows_per_chunk_; }
  uint64_t bytes_reserved() const { return chunks_.size() * chunk_bytes_; }
  // Bytes held once rows [0, n_rows) are reserved (whole chunks; at least what is held now).
  uint64_t BytesFor(int64_t n_rows) const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  uint64_t row_bytes_ = 0, chunk_bytes_ = 0;  // chunk_bytes_: rows_per_chunk × row_bytes, rounded to 64
  int rows_per_chunk_ = kCacheChunk, shift_ = 8;
  std::vector<uint8_t*> chunks_;                         // [n_chunks] of [rows_per_chunk, row_bytes] bytes
  std::vector<std::unique_ptr<uint8_t[], Free>> slabs_;  // the allocations: consecutive chunks of one Reserve
};

// Bytes held by every ChunkedRows of this process (what KvCache::Reserve adds to a new request).
uint64_t ChunkedRowsBytesHeld();

}  // namespace kvaudit
