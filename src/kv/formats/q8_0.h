// llama.cpp Q8_0 (8-bit codes, one fp16 scale per 32): 34 bytes per 32 elements = 8.5 bits per element.
// Bytes identical to ggml-quants.c quantize_row_q8_0_ref / dequantize_row_q8_0.
#pragma once

#include <cstdint>

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& Q8_0Codec();
const RowCodec& Q8_0CodecRef();    // the same bytes with the scalar dot/axpy twins (kv/formats/codec_kernels.h)
const ggml::GgmlType& Q8_0Ggml();  // llama.cpp's GGML_TYPE_Q8_0: the x86 quantize_row_q8_0 writes (not _ref), × q8_0

// The byte-level quantizer and dequantizer, exposed for the byte-exactness tests.
// src/dst rows: [n / 32 blocks of 34 bytes]; x, y: [n]; n % 32 == 0.
namespace detail {
void Q8_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q8_0Dequantize(const uint8_t* src, float* y, int64_t n);
}  // namespace detail

}  // namespace kvaudit
