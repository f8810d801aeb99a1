// Random inputs shared by the ops tests: weight matrices of every stored dtype and f32 vectors.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "ops/weight_matrix.h"
#include "quant/quant_type.h"
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

// [rows, cols] of type t: random quant bits, finite scales of varied (non power of two) size; an
// E8M0 scale (mxfp4) is the power of two of the same magnitude, 2^ilogb(|s|), or the subnormal
// 2^-128 where s is 0.
inline WeightMatrix RandomBlockMatrix(int64_t rows, int64_t cols, QuantType t, uint32_t seed) {
  WeightMatrix w;
  w.Resize(rows, cols, t);
  const QuantTraits& info = GetQuantTraits(t);
  const std::vector<uint8_t> bytes = RandomBytes(static_cast<int64_t>(w.bytes()), seed);
  std::memcpy(w.mutable_row(0), bytes.data(), bytes.size());
  const std::vector<float> scales =
      NormalRows(1, static_cast<int64_t>(w.bytes() / info.block_bytes) * 2, seed + 1, 0.01f);
  size_t s = 0;
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.mutable_row(r);
    for (int64_t b = 0; b < cols / info.block_elems; ++b) {
      for (int off : F16Fields(t)) {
        const uint16_t h = F32ToF16(scales[s++ % scales.size()]);
        std::memcpy(row + b * info.block_bytes + off, &h, 2);
      }
      if (E8M0Field(t) >= 0) {
        const float v = scales[s++ % scales.size()];
        row[b * info.block_bytes + E8M0Field(t)] = static_cast<uint8_t>(v == 0.0f ? 0 : 128 + std::ilogb(v));
      }
    }
  }
  return w;
}

// x [n] standard normal.
inline std::vector<float> RandomVector(size_t n, uint32_t seed) { return NormalRows(1, static_cast<int64_t>(n), seed); }

inline constexpr QuantType kQuantTypes[] = {QuantType::kF32, QuantType::kBF16, QuantType::kF16};

}  // namespace kvaudit::testing
