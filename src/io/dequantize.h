// Conversion of stored tensor rows to f32. Scalar reference implementations of ggml's
// dequantize_row_* (ggml/src/ggml-quants.c), bit-exact; used at load time only.
#pragma once

#include <cstdint>

#include <optional>

#include "io/tensor_view.h"
#include "quant/quant_type.h"

namespace kvaudit {

// n must be a multiple of the type's block size (checked), and the type float_convertible
// (checked). src may be unaligned. Reads ByteSize(type, n) bytes of src, writes dst [n].
// The in-memory weight type a tensor of `t` can stay in (quant/quant_type.h): f32, f16, bf16 and
// ggml's block formats; nullopt for types the matmul kernels do not read (f64, integers).
std::optional<QuantType> QuantTypeOfDType(DType t);

void DequantizeRow(DType type, const uint8_t* src, float* dst, int64_t n);

// The whole tensor into out [numel]; error naming the tensor if its dtype cannot be converted
// or its byte count does not match its shape.
Status DequantizeToF32(const TensorView& t, float* out);

// Rows [first_row, first_row + n_rows) of t (rows of cols() elements, e.g. token embeddings)
// into out [n_rows, cols]; error naming the tensor if out of range or not convertible.
Status DequantizeRowsToF32(const TensorView& t, int64_t first_row, int64_t n_rows, float* out);

}  // namespace kvaudit
