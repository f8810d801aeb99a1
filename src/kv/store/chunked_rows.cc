#include "kv/store/chunked_rows.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace kvaudit {

namespace {

std::atomic<uint64_t> g_bytes_held{0};  // Σ chunk bytes of every live ChunkedRows

int Log2(int x) {
  int s = 0;
  while ((1 << s) < x) ++s;
  return s;
}

}  // namespace

void ChunkedRows::Free::operator()(uint8_t* p) const { std::free(p); }

ChunkedRows::ChunkedRows(uint64_t row_bytes, int rows_per_chunk)
    : row_bytes_(row_bytes), rows_per_chunk_(rows_per_chunk), shift_(Log2(rows_per_chunk)) {
  KV_CHECK_MSG(rows_per_chunk > 0 && (rows_per_chunk & (rows_per_chunk - 1)) == 0,
               "rows per chunk must be a power of two");
  // 64-byte multiples keep every chunk start aligned for the SIMD kernels (aligned_alloc needs it too).
  chunk_bytes_ = (row_bytes_ * static_cast<uint64_t>(rows_per_chunk_) + 63) / 64 * 64;
}

ChunkedRows::~ChunkedRows() { Release(); }

ChunkedRows::ChunkedRows(ChunkedRows&& o) noexcept
    : row_bytes_(o.row_bytes_),
      chunk_bytes_(o.chunk_bytes_),
      rows_per_chunk_(o.rows_per_chunk_),
      shift_(o.shift_),
      chunks_(std::move(o.chunks_)),
      slabs_(std::move(o.slabs_)) {
  o.chunks_.clear();
  o.slabs_.clear();
}

ChunkedRows& ChunkedRows::operator=(ChunkedRows&& o) noexcept {
  if (this != &o) {
    Release();
    row_bytes_ = o.row_bytes_;
    chunk_bytes_ = o.chunk_bytes_;
    rows_per_chunk_ = o.rows_per_chunk_;
    shift_ = o.shift_;
    chunks_ = std::move(o.chunks_);
    slabs_ = std::move(o.slabs_);
    o.chunks_.clear();
    o.slabs_.clear();
  }
  return *this;
}

bool ChunkedRows::Reserve(int64_t n_rows) {
  KV_CHECK(n_rows >= 0);
  if (chunk_bytes_ == 0) return true;
  const uint64_t need = (static_cast<uint64_t>(n_rows) + rows_per_chunk_ - 1) >> shift_;
  if (need <= chunks_.size()) return true;
  const uint64_t add = need - chunks_.size();
  if (add > UINT64_MAX / chunk_bytes_) return false;
  // The pointer tables are the allocations made with new: bad_alloc there is caught here, so
  // every allocation failure of a store comes back as `false` (no exception leaves the store).
  try {
    chunks_.reserve(need);
    slabs_.reserve(slabs_.size() + 1);
  } catch (const std::bad_alloc&) {
    return false;
  }
  auto* slab = static_cast<uint8_t*>(std::aligned_alloc(64, add * chunk_bytes_));
  if (slab == nullptr) return false;
#if defined(__SANITIZE_ADDRESS__)
  // Sanitizer builds fill fresh chunks with 0xFF bytes (NaN as f32, f16 and bf16): a kernel that
  // read a row never written would change results and fail the equivalence tests, where zeros
  // (what the old zero-filled buffers held) could hide it.
  std::memset(slab, 0xFF, add * chunk_bytes_);
#endif
  slabs_.emplace_back(slab);
  for (uint64_t i = 0; i < add; ++i) chunks_.push_back(slab + i * chunk_bytes_);
  g_bytes_held.fetch_add(add * chunk_bytes_, std::memory_order_relaxed);
  return true;
}

void ChunkedRows::Release() {
  g_bytes_held.fetch_sub(bytes_reserved(), std::memory_order_relaxed);
  chunks_.clear();
  slabs_.clear();
}

uint64_t ChunkedRows::BytesFor(int64_t n_rows) const {
  const uint64_t chunks = (static_cast<uint64_t>(n_rows) + rows_per_chunk_ - 1) >> shift_;
  return (chunks > chunks_.size() ? chunks : chunks_.size()) * chunk_bytes_;
}

uint64_t ChunkedRowsBytesHeld() { return g_bytes_held.load(std::memory_order_relaxed); }

}  // namespace kvaudit
