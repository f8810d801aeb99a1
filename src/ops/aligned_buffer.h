// A 64-byte aligned, zero-initialised float array that owns its memory. 64 bytes = one cache line
// = one AVX-512 register, so SIMD kernels may use aligned loads on row starts whose width is a
// multiple of 16 floats, and rows never share a cache line between threads.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/status.h"

namespace kvaudit {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t n_floats) { Resize(n_floats); }

  // Discards the contents; the new buffer is zero-filled.
  void Resize(int64_t n_floats) {
    KV_CHECK(n_floats >= 0);
    size_ = n_floats;
    const size_t bytes = (static_cast<size_t>(n_floats) * sizeof(float) + 63) / 64 * 64;
    data_.reset(bytes ? static_cast<float*>(std::aligned_alloc(64, bytes)) : nullptr);
    KV_CHECK_MSG(bytes == 0 || data_ != nullptr, "out of memory");
    if (bytes) std::memset(data_.get(), 0, bytes);
  }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint64_t bytes() const { return static_cast<uint64_t>(size_) * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  int64_t size_ = 0;
};

}  // namespace kvaudit
