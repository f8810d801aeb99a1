// llama.cpp Q8_0 (8-bit codes, one fp16 scale per 32): 34 bytes per 32 elements = 8.5 bits per element.
// Bytes identical to ggml-quants.c quantize_row_q8_0_ref / dequantize_row_q8_0.
#pragma once

#include <cstdint>

#include "kv/row_codec.h"

namespace kvaudit {

const RowCodec& Q8_0Codec();

// The codec's kernels, exposed so tests can hold the SIMD twins against the scalar references.
// src/dst rows: [n / 32 blocks of 34 bytes]; x, y, q, acc: [n]; n % 32 == 0.
namespace detail {
void Q8_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q8_0Dequantize(const uint8_t* src, float* y, int64_t n);
float Q8_0DotScalar(const uint8_t* src, const float* q, int64_t n);
float Q8_0DotSimd(const uint8_t* src, const float* q, int64_t n);  // = scalar without AVX-512
void Q8_0AxpyScalar(const uint8_t* src, float w, float* acc, int64_t n);
void Q8_0AxpySimd(const uint8_t* src, float w, float* acc, int64_t n);
}  // namespace detail

}  // namespace kvaudit
