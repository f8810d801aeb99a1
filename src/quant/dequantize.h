// ggml's block formats dequantized to f32: the scalar references (quant/<format>.cc, ggml-quants.c
// dequantize_row_*, bit-exact) and their SIMD twins. The packed-weight matmul (ops/matmul.cc)
// dequantizes blocks with these right before it multiplies them, so a packed matrix computes
// with exactly the values a matrix dequantized at load would hold.
#pragma once

#include <cstdint>

#include "base/isa.h"
#include "quant/quant_type.h"

namespace kvaudit {

// dst [n] = the n elements of src (n a multiple of t's block size, checked; src may be unaligned;
// reads QuantRowBytes(t, n) bytes). For block types only (checked).
void DequantizeBlocksRef(QuantType t, const uint8_t* src, float* dst, int64_t n);
// SIMD twin: bitwise DequantizeBlocksRef; the active kernel path's (base/isa.h).
void DequantizeBlocks(QuantType t, const uint8_t* src, float* dst, int64_t n);
// Each path's own, for the kernels of the same path in other files (ops/matmul.cc), which call it
// per chunk without dispatching (base/isa_passes.h).
KVAUDIT_DECLARE_PER_PATH(void DequantizeBlocks(QuantType t, const uint8_t* src, float* dst, int64_t n);)

}  // namespace kvaudit
