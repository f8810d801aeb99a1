// llama.cpp Q5_0 (5-bit codes, symmetric, one fp16 scale per 32): 22 bytes per 32 elements = 5.5 bits per element.
// Bytes identical to ggml-quants.c quantize_row_q5_0_ref / dequantize_row_q5_0.
#pragma once

#include <cstdint>

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& Q5_0Codec();
const RowCodec& Q5_0CodecRef();    // the same bytes with the scalar dot/axpy twins (kv/formats/codec_kernels.h)
const ggml::GgmlType& Q5_0Ggml();  // llama.cpp's GGML_TYPE_Q5_0: quantize_row_q5_0_ref writes, × q8_0

// The byte-level quantizer and dequantizer, exposed for the byte-exactness tests.
// src/dst rows: [n / 32 blocks of 22 bytes]; x, y: [n]; n % 32 == 0.
namespace detail {
void Q5_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q5_0Dequantize(const uint8_t* src, float* y, int64_t n);
}  // namespace detail

}  // namespace kvaudit
