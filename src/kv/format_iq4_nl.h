// llama.cpp IQ4_NL (4-bit indices into a non-linear 16-entry table, fp16 scale per 32): 18 bytes per 32 elements = 4.5 bits per element.
// Bytes identical to ggml-quants.c quantize_row_iq4_nl_ref (ntry = -1) / dequantize_row_iq4_nl.
#pragma once

#include <cstdint>

#include "kv/row_codec.h"

namespace kvaudit {

const RowCodec& Iq4NlCodec();

// The codec's kernels, exposed so tests can hold the SIMD twins against the scalar references.
// src/dst rows: [n / 32 blocks of 18 bytes]; x, y, q, acc: [n]; n % 32 == 0.
namespace detail {
void Iq4NlQuantize(const float* x, uint8_t* dst, int64_t n);
void Iq4NlDequantize(const uint8_t* src, float* y, int64_t n);
float Iq4NlDotScalar(const uint8_t* src, const float* q, int64_t n);
float Iq4NlDotSimd(const uint8_t* src, const float* q, int64_t n);  // = scalar without AVX-512
void Iq4NlAxpyScalar(const uint8_t* src, float w, float* acc, int64_t n);
void Iq4NlAxpySimd(const uint8_t* src, float w, float* acc, int64_t n);
}  // namespace detail

}  // namespace kvaudit
