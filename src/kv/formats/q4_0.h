// llama.cpp Q4_0 (4-bit codes, symmetric, one fp16 scale per 32): 18 bytes per 32 elements = 4.5 bits per element.
// Bytes identical to ggml-quants.c quantize_row_q4_0_ref / dequantize_row_q4_0.
#pragma once

#include <cstdint>

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& Q4_0Codec();
const RowCodec& Q4_0CodecRef();    // the same bytes with the scalar dot/axpy twins (kv/formats/codec_kernels.h)
const ggml::GgmlType& Q4_0Ggml();  // llama.cpp's GGML_TYPE_Q4_0: quantize_row_q4_0_ref writes, × q8_0

// The byte-level quantizer and dequantizer, exposed for the byte-exactness tests.
// src/dst rows: [n / 32 blocks of 18 bytes]; x, y: [n]; n % 32 == 0.
namespace detail {
void Q4_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q4_0Dequantize(const uint8_t* src, float* y, int64_t n);
}  // namespace detail

}  // namespace kvaudit
