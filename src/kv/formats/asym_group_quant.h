// The asymmetric min/max group quantizer of KIVI (arXiv 2402.02750; jy-yuan/KIVI quant/new_pack.py),
// which is also Hugging Face QuantizedCache's quanto MaxOptimizer rule (notes §5). It is the primitive
// under the KIVI store (keys: per channel across G consecutive tokens, stride = row length; values:
// per token across G consecutive channels, stride 1) and under the int8/int4 row codecs.
//
// For one group of n values x[i·stride], with b bits and qmax = 2^b − 1:
//   mn = f16(min x);  scale = f16((max x − mn) / qmax)
//   q_i = clamp(round_half_even((x_i − mn) / scale), 0, qmax);   x̂_i = fma(q_i, scale, mn)
// - scale and mn are rounded to f16 BEFORE the codes are computed (KIVI keeps them in the fp16
//   activation dtype, transformers in the model dtype), so a store can keep them as two f16 values
//   (32/G bits per element) and the codes are the right ones for exactly what is stored.
// - KIVI clamps then rounds; quanto rounds then clamps. With integer bounds both give the same code.
// - The arithmetic is f32 (KIVI's is fp16): codes can differ from KIVI's only where fp16 rounding of
//   (x − mn)/scale would cross a half-integer.
// - Constant group (max == min, or a range so small that scale rounds to 0 in f16): KIVI computes
//   0/0 = NaN codes. Here scale = 0, every code 0, x̂ = mn: exact whenever the value is an f16 value
//   (as KIVI's fp16 activations always are), otherwise the f16 rounding of it (≤ 2^-11 relative).
// - Inputs must be finite; mn and scale saturate at ±65504 (the f16 range) instead of becoming inf.
//
// Packed codes: AsymCodeBytes(n, b) = ceil(n·b/8) bytes; code j is in byte j / (8/b) at bit
// b·(j mod 8/b), first element in the least significant bits. This is KIVI's packing of 32/b codes
// per int32 word (`code |= q_j << b·(j−i)`) read as little-endian bytes.
#pragma once

#include <cstdint>

namespace kvaudit {

// b ∈ {2, 4} (KIVI) or 8 (int8 codec).
inline bool AsymBitsValid(int bits) { return bits == 2 || bits == 4 || bits == 8; }
inline int64_t AsymCodeBytes(int64_t n, int bits) { return (n * bits + 7) / 8; }

// x: n values at stride `stride` (x[i·stride]); codes: [AsymCodeBytes(n, bits)] (fully written, pad
// bits 0); *scale, *min: f16-representable floats.
void AsymQuantizeGroup(const float* x, int64_t n, int64_t stride, int bits, uint8_t* codes, float* scale, float* min);

// y[i·stride] = q_i·scale + min for i < n.
void AsymDequantizeGroup(const uint8_t* codes, int64_t n, int bits, float scale, float min, float* y, int64_t stride);

// Code j of a packed group (for fused kernels and tests).
inline uint32_t AsymCode(const uint8_t* codes, int64_t j, int bits) {
  const int per_byte = 8 / bits;
  return (codes[j / per_byte] >> (bits * (j % per_byte))) & ((1u << bits) - 1u);
}

}  // namespace kvaudit
