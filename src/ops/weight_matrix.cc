#include "ops/weight_matrix.h"

namespace kvaudit {

void WeightMatrix::Resize(int64_t rows, int64_t cols, QuantType type) {
  KV_CHECK(rows >= 0 && cols >= 0);
  rows_ = rows;
  cols_ = cols;
  parts_.clear();
  row_maps_.clear();
  const size_t bytes = (static_cast<size_t>(rows) * QuantRowBytesChecked(type, cols) + 63) / 64 * 64;
  owned_.reset(bytes ? static_cast<uint8_t*>(std::aligned_alloc(64, bytes)) : nullptr);
  KV_CHECK_MSG(bytes == 0 || owned_ != nullptr, "out of memory");
  if (bytes) std::memset(owned_.get(), 0, bytes);
  parts_.push_back({owned_.get(), type, rows, cols, nullptr});
}

void WeightMatrix::AddExternalPart(WeightView part, std::vector<int32_t> row_map) {
  KV_CHECK_MSG(!owned_, "a matrix with owned storage takes no external part");
  KV_CHECK(part.rows >= 0 && part.cols >= 0);
  if (parts_.empty()) cols_ = part.cols;
  KV_CHECK_MSG(part.cols == cols_, "every part of a matrix has its columns");
  (void)QuantRowBytesChecked(part.type, part.cols);  // whole blocks per row
  if (!row_map.empty()) {
    KV_CHECK(static_cast<int64_t>(row_map.size()) == part.rows);
    for (int32_t r : row_map) KV_CHECK(r >= 0 && r < part.rows);
    row_maps_.push_back(std::make_unique<std::vector<int32_t>>(std::move(row_map)));
    part.row_map = row_maps_.back()->data();
  } else {
    part.row_map = nullptr;
  }
  parts_.push_back(part);
  rows_ += part.rows;
}

WeightView WeightMatrix::view() const {
  KV_CHECK_MSG(parts_.size() == 1, "WeightMatrix::view: the matrix has several parts (use parts())");
  return parts_[0];
}

bool WeightMatrix::mixed() const {
  for (const WeightView& p : parts_) {
    if (p.type != parts_[0].type) return true;
  }
  return false;
}

QuantType WeightMatrix::type() const { return parts_.empty() || mixed() ? QuantType::kF32 : parts_[0].type; }

uint64_t WeightMatrix::bytes() const {
  uint64_t b = 0;
  for (const WeightView& p : parts_) b += static_cast<uint64_t>(p.rows) * p.row_bytes();
  return b;
}

uint8_t* WeightMatrix::mutable_row(int64_t r) {
  KV_CHECK_MSG(owned_ && parts_.size() == 1, "mutable_row: the matrix does not own its storage");
  KV_CHECK(r >= 0 && r <= rows_);
  return owned_.get() + static_cast<size_t>(r) * parts_[0].row_bytes();
}

float* WeightMatrix::f32() {
  KV_CHECK(owned_ && parts_.size() == 1 && parts_[0].type == QuantType::kF32);
  return reinterpret_cast<float*>(owned_.get());
}

}  // namespace kvaudit
