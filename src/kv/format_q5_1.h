// llama.cpp Q5_1 (5-bit codes, fp16 scale and minimum per 32): 24 bytes per 32 elements = 6.0 bits per element.
// Bytes identical to ggml-quants.c quantize_row_q5_1_ref / dequantize_row_q5_1.
#pragma once

#include <cstdint>

#include "kv/row_codec.h"

namespace kvaudit {

const RowCodec& Q5_1Codec();

// The codec's kernels, exposed so tests can hold the SIMD twins against the scalar references.
// src/dst rows: [n / 32 blocks of 24 bytes]; x, y, q, acc: [n]; n % 32 == 0.
namespace detail {
void Q5_1Quantize(const float* x, uint8_t* dst, int64_t n);
void Q5_1Dequantize(const uint8_t* src, float* y, int64_t n);
float Q5_1DotScalar(const uint8_t* src, const float* q, int64_t n);
float Q5_1DotSimd(const uint8_t* src, const float* q, int64_t n);  // = scalar without AVX-512
void Q5_1AxpyScalar(const uint8_t* src, float w, float* acc, int64_t n);
void Q5_1AxpySimd(const uint8_t* src, float w, float* acc, int64_t n);
}  // namespace detail

}  // namespace kvaudit
