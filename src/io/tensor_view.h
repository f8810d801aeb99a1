// A tensor inside a memory-mapped file: no copy, no ownership (the file object owns the mapping).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/dtype.h"

namespace kvaudit {

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  // Row-major, outermost first (PyTorch order) for both formats: GGUF's ne[] is reversed on load,
  // so a GGUF weight [ne0=in, ne1=out] appears here as {out, in}.
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }  // innermost dimension
  int64_t rows() const { return cols() == 0 ? 0 : numel() / cols(); }
};

}  // namespace kvaudit
