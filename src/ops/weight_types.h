// The element types a weight matrix can be kept in, in memory, as the file stores it: f32, the
// 16-bit floats, and ggml's block formats (ggml/src/ggml-common.h block_* structs). A block type
// packs `block_elems` consecutive elements of a row into `block_bytes` bytes; a row of a block
// type is a whole number of blocks (cols % block_elems == 0), so rows are independent.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvaudit {

enum class WeightType : uint8_t {
  kF32, kBF16, kF16,
  // ggml's legacy 32-element blocks
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0,
  // K-quants: 256-element super-blocks
  kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K,
  // non-linear 4-bit grids (IQ4_NL: 32-element blocks; IQ4_XS: 256-element super-blocks)
  kIQ4_NL, kIQ4_XS,
};
inline constexpr int kNumWeightTypes = 15;

struct WeightTypeInfo {
  const char* name;  // lower case, as llama.cpp's tools print them ("q4_K", "iq4_xs")
  int block_elems;   // 1 for f32/bf16/f16
  int block_bytes;   // bytes of one block (4 or 2 for the plain types)
};

const WeightTypeInfo& GetWeightTypeInfo(WeightType t);
inline const char* WeightTypeName(WeightType t) { return GetWeightTypeInfo(t).name; }
inline bool IsBlockType(WeightType t) { return t >= WeightType::kQ4_0; }
// Bytes of one row of `cols` elements; cols must be a multiple of the block size (checked).
size_t WeightRowBytes(WeightType t, int64_t cols);

}  // namespace kvaudit
