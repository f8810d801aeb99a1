// The reference functions of ggml's block formats, one file per format (quant/<format>.cc), each
// bit-exact with ggml-quants.c: the quantizer (quantize_row_*_ref, for the types a KV cache can
// store, and mxfp4), the dequantizer (dequantize_row_*) and the expanded codes llama.cpp's integer
// dot reads (the KV cache's 32-element types). The traits table (quant/quant_type.h) points at
// them; callers go through it.
//
// Shapes: x, y [n] f32; rows [n / block_elems blocks of block_bytes]; n a multiple of the block
// size (the callers check it); rows may start at any byte offset.
#pragma once

#include <cstdint>

#include "quant/ggml_blocks.h"

namespace kvaudit::ggml {

void Q8_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q8_0Dequantize(const uint8_t* src, float* y, int64_t n);
void Q8_0ToCodes(const uint8_t* row, int64_t n, BlockCodes out);

void Q4_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q4_0Dequantize(const uint8_t* src, float* y, int64_t n);
void Q4_0ToCodes(const uint8_t* row, int64_t n, BlockCodes out);

void Q4_1Quantize(const float* x, uint8_t* dst, int64_t n);
void Q4_1Dequantize(const uint8_t* src, float* y, int64_t n);
void Q4_1ToCodes(const uint8_t* row, int64_t n, BlockCodes out);

void Q5_0Quantize(const float* x, uint8_t* dst, int64_t n);
void Q5_0Dequantize(const uint8_t* src, float* y, int64_t n);
void Q5_0ToCodes(const uint8_t* row, int64_t n, BlockCodes out);

void Q5_1Quantize(const float* x, uint8_t* dst, int64_t n);
void Q5_1Dequantize(const uint8_t* src, float* y, int64_t n);
void Q5_1ToCodes(const uint8_t* row, int64_t n, BlockCodes out);

void Iq4NlQuantize(const float* x, uint8_t* dst, int64_t n);
void Iq4NlDequantize(const uint8_t* src, float* y, int64_t n);
void Iq4NlToCodes(const uint8_t* row, int64_t n, BlockCodes out);

// MXFP4: weights only; the quantizer writes test and synthetic weights, the expanded codes feed
// engine=llama.cpp's integer dot of MXFP4 weights.
void Mxfp4Quantize(const float* x, uint8_t* dst, int64_t n);
void Mxfp4Dequantize(const uint8_t* src, float* y, int64_t n);
void Mxfp4ToCodes(const uint8_t* row, int64_t n, BlockCodes out);

// The 256-element super-block types: weights only, dequantizer only.
void Q2_KDequantize(const uint8_t* src, float* y, int64_t n);
void Q3_KDequantize(const uint8_t* src, float* y, int64_t n);
void Q4_KDequantize(const uint8_t* src, float* y, int64_t n);
void Q5_KDequantize(const uint8_t* src, float* y, int64_t n);
void Q6_KDequantize(const uint8_t* src, float* y, int64_t n);
void Iq4XsDequantize(const uint8_t* src, float* y, int64_t n);

}  // namespace kvaudit::ggml
