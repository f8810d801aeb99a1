// A weight matrix W [rows, cols] (row-major, nn.Linear layout) kept in the dtype it was stored in:
// f32, bf16 or f16. Why: decode reads every weight once per token, so it is memory-bound, and
// 16-bit storage halves the bytes (kvq-code-16m: 31 MB instead of 63 MB, nearly L3-resident).
// bf16→f32 (a 16-bit shift) and f16→f32 (vcvtph2ps) are exact, and the kernels accumulate in f32,
// so the arithmetic is that of the f32 matrix: results are identical to upcasting at load.
// GGUF block formats (q8_0, q4_k, …) are dequantized to f32 at load and stored as kF32.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/status.h"
#include "ops/weight_types.h"

namespace kvaudit {

// Bytes per element of a plain (non-block) type.
inline int WeightTypeBytes(WeightType t) {
  KV_CHECK_MSG(!IsBlockType(t), "WeightTypeBytes: a block type has no per-element size");
  return t == WeightType::kF32 ? 4 : 2;
}

// Non-owning view; what the matmul kernels take.
struct WeightView {
  const void* data = nullptr;
  WeightType type = WeightType::kF32;
  int64_t rows = 0, cols = 0;

  const uint8_t* row(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * cols * WeightTypeBytes(type);
  }
};

// Owning, 64-byte aligned, zero-filled storage for one WeightView.
class WeightMatrix {
 public:
  void Resize(int64_t rows, int64_t cols, WeightType type) {
    KV_CHECK(rows >= 0 && cols >= 0);
    rows_ = rows;
    cols_ = cols;
    type_ = type;
    const size_t bytes = (static_cast<size_t>(rows * cols) * WeightTypeBytes(type) + 63) / 64 * 64;
    data_.reset(bytes ? static_cast<uint8_t*>(std::aligned_alloc(64, bytes)) : nullptr);
    KV_CHECK_MSG(bytes == 0 || data_ != nullptr, "out of memory");
    if (bytes) std::memset(data_.get(), 0, bytes);
  }

  WeightView view() const { return {data_.get(), type_, rows_, cols_}; }
  uint8_t* mutable_row(int64_t r) { return data_.get() + static_cast<size_t>(r) * cols_ * WeightTypeBytes(type_); }
  float* f32() {
    KV_CHECK(type_ == WeightType::kF32);
    return reinterpret_cast<float*>(data_.get());
  }
  WeightType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool empty() const { return rows_ * cols_ == 0; }
  uint64_t bytes() const { return static_cast<uint64_t>(rows_ * cols_) * WeightTypeBytes(type_); }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> data_;
  int64_t rows_ = 0, cols_ = 0;
  WeightType type_ = WeightType::kF32;
};

// out [r1 - r0, cols] = rows [r0, r1) of w as f32 (exact). SIMD for 16-bit types with AVX-512.
void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out);
// Scalar twin for tests.
void WeightRowsToF32Ref(const WeightView& w, int64_t r0, int64_t r1, float* out);

}  // namespace kvaudit
