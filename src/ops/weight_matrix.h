// A weight matrix W [rows, cols] (row-major, nn.Linear layout) kept in the type it was stored in:
// f32, bf16, f16, or one of ggml's block formats (quant/quant_type.h). Why: decode reads every
// weight once per token, so it is memory-bound, and the stored type is the fewest bytes (bf16
// kvq-code-16m: 31 MB instead of 63 MB; an 8B q4_k_m GGUF: 4.9 GB instead of 32 GB as f32).
// Every kernel computes on the f32 value of each weight, exactly: bf16→f32 (a 16-bit shift) and
// f16→f32 (vcvtph2ps) are exact, and a block is dequantized with ggml's reference arithmetic
// (quant/dequantize.h) right before it is multiplied; the f32 products are accumulated in the
// canonical order (ops/dot.h). So results are identical to converting the matrix to f32 at load.
//
// A matrix is one or more parts stacked by rows, each of one type (q|k|v fused from tensors that
// a q4_k_m file stores in q4_K, q4_K and q6_K), and a part may read its rows in another order than
// stored (GGUF Q/K rows permuted for interleaved RoPE, model/weights.cc) through a row map. A part
// either owns its bytes or points into memory the caller keeps alive (a memory-mapped GGUF file).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "base/status.h"
#include "quant/quant_type.h"

namespace kvaudit {

// Bytes per element of a plain (non-block) type.
inline int QuantTypeBytes(QuantType t) {
  KV_CHECK_MSG(!IsBlockType(t), "QuantTypeBytes: a block type has no per-element size");
  return t == QuantType::kF32 ? 4 : 2;
}

// Non-owning view of one single-type part; what the matmul kernels take.
struct WeightView {
  const void* data = nullptr;
  QuantType type = QuantType::kF32;
  int64_t rows = 0, cols = 0;
  const int32_t* row_map = nullptr;  // [rows]: stored row of row r; nullptr = row r is stored row r

  size_t row_bytes() const { return QuantRowBytes(type, cols); }
  const uint8_t* row(int64_t r) const {
    const int64_t stored = row_map ? row_map[r] : r;
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(stored) * row_bytes();
  }
};

class WeightMatrix {
 public:
  WeightMatrix() = default;
  WeightMatrix(WeightMatrix&&) = default;
  WeightMatrix& operator=(WeightMatrix&&) = default;

  // One owned part: 64-byte aligned, zero-filled storage for [rows, cols] of `type`.
  void Resize(int64_t rows, int64_t cols, QuantType type);
  // Appends a part of external_rows.cols == cols() columns (the first part sets cols()) whose bytes
  // the caller keeps alive; `row_map` (empty or [part.rows] stored row indices) reorders its rows.
  void AddExternalPart(WeightView part, std::vector<int32_t> row_map = {});

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool empty() const { return rows_ * cols_ == 0; }
  // Parts in row order; their rows sum to rows().
  const std::vector<WeightView>& parts() const { return parts_; }
  // The single part (an internal check fails for a multi-part matrix).
  WeightView view() const;
  // The type of the single part or of every part, else kF32 with mixed() true.
  QuantType type() const;
  bool mixed() const;
  // Bytes of the weights as held (packed sizes for block types; row maps not counted).
  uint64_t bytes() const;
  // Owned storage, single part only (checked).
  uint8_t* mutable_row(int64_t r);
  float* f32();

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> owned_;
  // Row maps live on the heap so the parts' pointers survive moves of the matrix.
  std::vector<std::unique_ptr<std::vector<int32_t>>> row_maps_;
  std::vector<WeightView> parts_;
  int64_t rows_ = 0, cols_ = 0;
};

// out [r1 - r0, cols] = rows [r0, r1) of w as f32 (exact; block types dequantized). SIMD for the
// 16-bit types with AVX-512 and for the block types (quant/dequantize.h).
void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out);
// Scalar twin for tests.
void WeightRowsToF32Ref(const WeightView& w, int64_t r0, int64_t r1, float* out);

}  // namespace kvaudit
