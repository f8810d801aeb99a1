// llama.cpp IQ4_NL (4-bit indices into a non-linear 16-entry table, fp16 scale per 32): 18 bytes per 32 elements = 4.5
// bits per element. Bytes identical to ggml-quants.c quantize_row_iq4_nl_ref (ntry = -1) / dequantize_row_iq4_nl.
#pragma once

#include <cstdint>

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& Iq4NlCodec();
const RowCodec& Iq4NlCodecRef();    // the same bytes with the scalar dot/axpy twins (kv/formats/codec_kernels.h)
const ggml::GgmlType& Iq4NlGgml();  // llama.cpp's GGML_TYPE_IQ4_NL: quantize_row_iq4_nl_ref writes, × q8_0

// The byte-level quantizer and dequantizer, exposed for the byte-exactness tests.
// src/dst rows: [n / 32 blocks of 18 bytes]; x, y: [n]; n % 32 == 0.
namespace detail {
void Iq4NlQuantize(const float* x, uint8_t* dst, int64_t n);
void Iq4NlDequantize(const uint8_t* src, float* y, int64_t n);
}  // namespace detail

}  // namespace kvaudit
