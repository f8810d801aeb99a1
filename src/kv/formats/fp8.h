// OCP 8-bit floating point (OCP "OFP8 Formats for Deep Learning" v1.0, 2023) KV rows, as vLLM and
// TensorRT-LLM store them (docs/research/llamacpp-kv-notes.md §6):
//   e4m3 ("e4m3fn"): bias 7, 3 mantissa bits, no infinities, NaN only S.1111.111, max ±448,
//                    smallest subnormal 2^-9.
//   e5m2:            IEEE-like, bias 15, 2 mantissa bits, ±inf = S.11111.00, NaN S.11111.{01,10,11},
//                    max ±57344, smallest subnormal 2^-16.
// Encoding is f32 -> fp8 with round to nearest even and SATURATION: finite overflow and ±inf become
// ±max (CUDA __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...), which vLLM's cache write uses); NaN stays
// NaN (S.1111111). Both codecs store x as fp8(x / scale) and decode fp8 · scale, the division
// matching vLLM's scaled_vec_conversion.
#pragma once

#include <cstdint>

#include "kv/formats/row_codec.h"

namespace kvaudit {

enum class Fp8Kind { kE4M3, kE5M2 };

uint8_t Fp8FromF32(float x, Fp8Kind kind);   // RNE, saturating, written from the bit-level definition
float Fp8ToF32(uint8_t code, Fp8Kind kind);  // exact
float Fp8MaxFinite(Fp8Kind kind);            // 448 (e4m3) or 57344 (e5m2)

// The calibrated per-tensor / per-head scale: amax / max_fp8 (llm-compressor / compressed-tensors
// `calculate_qparams` for FP8: bit_range/2 = 448, notes §6). A zero scale becomes FLT_EPSILON, as
// compressed-tensors replaces zero scales by the f32 eps.
float Fp8CalibScale(float amax, Fp8Kind kind);

// `unit` / `calib`: one byte per element, the scale is CodecParams::scale (not stored in the row).
const RowCodec& Fp8E4M3Codec();  // "fp8_e4m3"
const RowCodec& Fp8E5M2Codec();  // "fp8_e5m2"

// `dynamic`: blocks of kFp8DynamicBlock elements along the row, each {f32 scale = amax/max_fp8;
// 32 codes} = 36 bytes, 9 bits per element; CodecParams::scale is ignored.
// Why an f32 scale and not f16: amax/57344 for e5m2 is below the smallest normal f16 (2^-14) for
// every block with amax < 3.5, i.e. most KV blocks, and an f16-rounded scale no longer maps the block
// maximum onto ±max_fp8; f32 keeps amax/max exact for any finite amax at +0.5 bit per element.
// An all-zero block stores scale 0 and zero codes (exact).
inline constexpr int kFp8DynamicBlock = 32;
const RowCodec& Fp8E4M3DynamicCodec();  // "fp8_e4m3_dynamic"
const RowCodec& Fp8E5M2DynamicCodec();  // "fp8_e5m2_dynamic"

// The same formats with the scalar dot/axpy the AVX-512 twins are tested against.
const RowCodec& Fp8E4M3CodecRef();
const RowCodec& Fp8E5M2CodecRef();
const RowCodec& Fp8E4M3DynamicCodecRef();
const RowCodec& Fp8E5M2DynamicCodecRef();

}  // namespace kvaudit
