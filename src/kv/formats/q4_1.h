// llama.cpp Q4_1 (4-bit codes, fp16 scale and minimum per 32): 20 bytes per 32 elements = 5.0 bits per element.
// Bytes identical to ggml-quants.c quantize_row_q4_1_ref / dequantize_row_q4_1.
#pragma once

#include <cstdint>

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& Q4_1Codec();
const RowCodec& Q4_1CodecRef();    // the same bytes with the scalar dot/axpy twins (kv/formats/codec_kernels.h)
const ggml::GgmlType& Q4_1Ggml();  // llama.cpp's GGML_TYPE_Q4_1: quantize_row_q4_1_ref writes, × q8_1

// The byte-level quantizer and dequantizer, exposed for the byte-exactness tests.
// src/dst rows: [n / 32 blocks of 20 bytes]; x, y: [n]; n % 32 == 0.
namespace detail {
void Q4_1Quantize(const float* x, uint8_t* dst, int64_t n);
void Q4_1Dequantize(const uint8_t* src, float* y, int64_t n);
}  // namespace detail

}  // namespace kvaudit
