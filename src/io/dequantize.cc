#include "io/dequantize.h"

#include <cstring>
#include <string>

#include "base/half.h"
#include "quant/dequantize.h"

namespace kvaudit {
namespace {
inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

QuantType BlockQuantType(DType t) {
  const std::optional<QuantType> w = QuantTypeOfDType(t);
  KV_CHECK_MSG(w && IsBlockType(*w), "BlockQuantType: not a block type");
  return *w;
}
}  // namespace

std::optional<QuantType> QuantTypeOfDType(DType t) {
  switch (t) {
    case DType::kQ8_0: return QuantType::kQ8_0;
    case DType::kQ4_0: return QuantType::kQ4_0;
    case DType::kQ4_1: return QuantType::kQ4_1;
    case DType::kQ5_0: return QuantType::kQ5_0;
    case DType::kQ5_1: return QuantType::kQ5_1;
    case DType::kQ4_K: return QuantType::kQ4_K;
    case DType::kQ5_K: return QuantType::kQ5_K;
    case DType::kQ6_K: return QuantType::kQ6_K;
    case DType::kQ2_K: return QuantType::kQ2_K;
    case DType::kQ3_K: return QuantType::kQ3_K;
    case DType::kIQ4_NL: return QuantType::kIQ4_NL;
    case DType::kIQ4_XS: return QuantType::kIQ4_XS;
    case DType::kMXFP4: return QuantType::kMXFP4;
    case DType::kF32: return QuantType::kF32;
    case DType::kF16: return QuantType::kF16;
    case DType::kBF16: return QuantType::kBF16;
    default: return std::nullopt;
  }
}

void DequantizeRow(DType type, const uint8_t* src, float* dst, int64_t n) {
  const DTypeInfo& info = GetDTypeInfo(type);
  KV_CHECK_MSG(info.float_convertible, "DequantizeRow: type has no f32 conversion");
  KV_CHECK(n >= 0 && n % info.block_elems == 0);
  switch (type) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(LoadU16(src + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToF32(LoadU16(src + 2 * i));
      return;
    case DType::kF64:
      for (int64_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, src + 8 * i, 8);
        dst[i] = static_cast<float>(v);
      }
      return;
    default: DequantizeBlocksRef(BlockQuantType(type), src, dst, n); return;
  }
}

namespace {

Status CheckConvertible(const TensorView& t) {
  const DTypeInfo& info = GetDTypeInfo(t.dtype);
  if (!info.float_convertible) {
    return BadInput("tensor '" + t.name + "': dtype " + std::string(info.name) +
                    " cannot be converted to f32; hint: weights must be float or ggml-quantized");
  }
  return Status::Ok();
}

}  // namespace

Status DequantizeToF32(const TensorView& t, float* out) {
  KV_RETURN_IF_ERROR(CheckConvertible(t));
  const int64_t n = t.numel();
  auto bytes = ByteSize(t.dtype, n);
  if (!bytes.ok() || *bytes != t.nbytes) {
    return BadInput("tensor '" + t.name + "': byte count " + std::to_string(t.nbytes) +
                    " does not match its shape and dtype" +
                    (bytes.ok() ? " (expected " + std::to_string(*bytes) + ")" : ": " + bytes.error().message) +
                    "; hint: the file is corrupt or truncated");
  }
  if (n > 0) DequantizeRow(t.dtype, t.data, out, n);
  return Status::Ok();
}

Status DequantizeRowsToF32(const TensorView& t, int64_t first_row, int64_t n_rows, float* out) {
  KV_RETURN_IF_ERROR(CheckConvertible(t));
  const int64_t cols = t.cols();
  if (first_row < 0 || n_rows < 0 || first_row > t.rows() || n_rows > t.rows() - first_row) {
    return BadInput("tensor '" + t.name + "': rows [" + std::to_string(first_row) + ", +" + std::to_string(n_rows) +
                    ") out of range (" + std::to_string(t.rows()) +
                    " rows); hint: a token id or index exceeds the tensor");
  }
  auto row_bytes = ByteSize(t.dtype, cols);
  if (!row_bytes.ok()) return BadInput("tensor '" + t.name + "': " + row_bytes.error().message);
  auto total = ByteSize(t.dtype, t.numel());
  if (!total.ok() || *total != t.nbytes) {
    return BadInput("tensor '" + t.name + "': byte count does not match its shape; hint: corrupt file");
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    DequantizeRow(t.dtype, t.data + static_cast<uint64_t>(first_row + r) * *row_bytes, out + r * cols, cols);
  }
  return Status::Ok();
}

}  // namespace kvaudit
