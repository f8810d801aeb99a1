// Random inputs shared by the ops tests: weight matrices of every stored dtype and f32 vectors.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "base/half.h"
#include "ops/weight_matrix.h"

namespace kvaudit::testing {

// W [rows, cols] of type t with normal values (f16 also gets subnormals, inf-free).
inline WeightMatrix RandomWeights(int64_t rows, int64_t cols, WeightType t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.5f);
  WeightMatrix w;
  w.Resize(rows, cols, t);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.mutable_row(r);
    for (int64_t i = 0; i < cols; ++i) {
      float v = d(rng);
      if ((r * cols + i) % 97 == 0) v *= 1e-6f;  // subnormal in f16
      if (t == WeightType::kF32) reinterpret_cast<float*>(row)[i] = v;
      if (t == WeightType::kBF16) reinterpret_cast<uint16_t*>(row)[i] = F32ToBF16(v);
      if (t == WeightType::kF16) reinterpret_cast<uint16_t*>(row)[i] = F32ToF16(v);
    }
  }
  return w;
}

// x [n] standard normal.
inline std::vector<float> RandomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline constexpr WeightType kWeightTypes[] = {WeightType::kF32, WeightType::kBF16, WeightType::kF16};

}  // namespace kvaudit::testing
