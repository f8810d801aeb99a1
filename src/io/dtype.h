// Element types of tensors in safetensors and GGUF files.
// Block formats follow ggml (ggml/src/ggml-common.h): QK=32 for the legacy quants, iq4_nl and
// mxfp4, 256 for the K-quants and iq4_xs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace kvaudit {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF64,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kBool,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kQ2_K,
  kQ3_K,
  kIQ4_NL,
  kIQ4_XS,
  kMXFP4,
};

struct DTypeInfo {
  std::string_view name;   // as the file formats spell it ("F32", "BF16", "Q4_K", ...)
  int block_elems;         // elements per block (1 for plain types)
  int block_bytes;         // bytes per block
  bool float_convertible;  // DequantizeRow supports it
};

inline constexpr int kNumDTypes = 23;

const DTypeInfo& GetDTypeInfo(DType t);
// The DType spelled `name` ("BF16", "Q4_K", ...), exact case; nullopt if unknown.
std::optional<DType> DTypeFromName(std::string_view name);
// Bytes of n elements; error when n is not a multiple of the block size.
Expected<uint64_t> ByteSize(DType t, int64_t n_elements);

}  // namespace kvaudit
