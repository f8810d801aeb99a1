// Random inputs shared by the ops tests: weight matrices of every stored dtype and f32 vectors.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "ops/weight_matrix.h"
#include "quant/ggml_blocks.h"
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

// A finite fp16 scale of any size (subnormals up to 65504, either sign); every 16th the largest.
inline uint16_t RandomF16Scale(Rng& rng) {
  if (rng.Below(16) == 0) return rng.Below(2) ? 0x7BFF : 0xFBFF;  // ±65504
  uint16_t h;
  do h = static_cast<uint16_t>(rng.Below(65536));
  while ((h & 0x7C00) == 0x7C00);  // inf, nan
  return h;
}

// An f32 activation scale from 2^-100 (the products with fp16 subnormals are f32 subnormals) to 2^20.
inline float RandomF32Scale(Rng& rng) {
  return std::ldexp(rng.Uniform(-1.0f, 1.0f), static_cast<int>(rng.Below(121)) - 100);
}

// q8_K activation blocks: random codes (-128..127, with whole blocks at ±127 / -128), bsums their
// sums, random scales.
inline std::vector<ggml::BlockQ8_K> RandomQ8K(int64_t nb, Rng& rng) {
  std::vector<ggml::BlockQ8_K> x(static_cast<size_t>(nb));  // [nb]
  for (ggml::BlockQ8_K& b : x) {
    const uint32_t mode = rng.Below(8);
    for (int8_t& q : b.qs) {
      q = mode == 0   ? int8_t{127}
          : mode == 1 ? int8_t{-128}
          : mode == 2 ? int8_t{-127}
                      : static_cast<int8_t>(static_cast<int>(rng.Below(256)) - 128);
    }
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int e = 0; e < 16; ++e) s += b.qs[16 * g + e];
      b.bsums[g] = static_cast<int16_t>(s);
    }
    b.d = RandomF32Scale(rng);
  }
  return x;
}

// Random bytes in every block of a row of `block_bytes`-byte blocks, some blocks all 0x00 or all
// 0xFF (every code at a bound), and random finite fp16 scales at the offsets `f16`.
inline std::vector<uint8_t> RandomBlocks(int64_t nb, int64_t block_bytes, const std::vector<int>& f16, Rng& rng) {
  std::vector<uint8_t> w(static_cast<size_t>(nb * block_bytes));  // [nb × block_bytes]
  for (int64_t b = 0; b < nb; ++b) {
    const uint32_t mode = rng.Below(8);
    for (int64_t i = 0; i < block_bytes; ++i) {
      w[b * block_bytes + i] = mode == 0 ? 0x00 : mode == 1 ? 0xFF : static_cast<uint8_t>(rng.Below(256));
    }
    for (int off : f16) {
      const uint16_t h = RandomF16Scale(rng);
      std::memcpy(&w[b * block_bytes + off], &h, 2);
    }
  }
  return w;
}

inline constexpr QuantType kQuantTypes[] = {QuantType::kF32, QuantType::kBF16, QuantType::kF16};

}  // namespace kvaudit::testing
