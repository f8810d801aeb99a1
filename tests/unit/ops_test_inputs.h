// Random inputs shared by the ops tests: weight matrices of every stored dtype and f32 vectors.
#pragma once

#include <cstdint>
#include <vector>

#include "base/half.h"
#include "ops/weight_matrix.h"
#include "support/random_rows.h"

namespace kvaudit::testing {

// W [rows, cols] of type t holding values [rows·cols] (rounded to t).
inline WeightMatrix WeightsFrom(int64_t rows, int64_t cols, QuantType t, const std::vector<float>& values) {
  WeightMatrix w;
  w.Resize(rows, cols, t);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.mutable_row(r);
    for (int64_t i = 0; i < cols; ++i) {
      const float v = values[static_cast<size_t>(r * cols + i)];
      if (t == QuantType::kF32) reinterpret_cast<float*>(row)[i] = v;
      if (t == QuantType::kBF16) reinterpret_cast<uint16_t*>(row)[i] = F32ToBF16(v);
      if (t == QuantType::kF16) reinterpret_cast<uint16_t*>(row)[i] = F32ToF16(v);
    }
  }
  return w;
}

// W [rows, cols] of type t with normal values (f16 also gets subnormals, inf-free).
inline WeightMatrix RandomWeights(int64_t rows, int64_t cols, QuantType t, uint32_t seed) {
  std::vector<float> v = NormalRows(rows, cols, seed, 0.5f);
  for (size_t i = 0; i < v.size(); i += 97) v[i] *= 1e-6f;  // subnormal in f16
  return WeightsFrom(rows, cols, t, v);
}

// x [n] standard normal.
inline std::vector<float> RandomVector(size_t n, uint32_t seed) { return NormalRows(1, static_cast<int64_t>(n), seed); }

inline constexpr QuantType kQuantTypes[] = {QuantType::kF32, QuantType::kBF16, QuantType::kF16};

}  // namespace kvaudit::testing
