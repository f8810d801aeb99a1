// SGLang's MX-style fp4 KV rows (`--kv-cache-dtype fp4_mx_block16`, formerly `fp4_e2m1`, which
// now raises "deprecated, use fp4_mx_block16"): E2M1 codes (quant/e2m1.h) in blocks of 16 with a
// power-of-two scale stored as a biased exponent byte (E8M0-like). Not OCP MXFP4, whose blocks are
// 32 with floor(log2 amax) − 2 as exponent. Read at sgl-project/sglang:
// python/sglang/srt/layers/quantization/kvfp4_tensor.py@0dae407b (FP4MXBlock16KVQuantizeUtil,
// the same arithmetic as the old KVFP4QuantizeUtil @0e6b6cf0), per block of 16:
//   e = ceil(log2(max(amax / 6, 1e-10)));  byte = e + 127     (an all-zero block: e = −33, byte 94)
//   s_i = x_i / 2^e                                              (exact)
//   code_i = (x_i < 0 ? 8 : 0) | #{t in 0.25 0.75 1.25 1.75 2.5 3.5 5 : |s_i| >= t}
// so ties round up in magnitude (0.25 -> 0.5, 1.25 -> 1.5, 2.5 -> 3, 5 -> 6; not RNE), |s| >= 5 is 6,
// −0.0 is code 0 and a small negative rounding to 0 is code 8 (−0).
// Dequantize: e2m1(code) · 2^(byte − 127) in f32, then bf16, which changes nothing (one or two
// significant bits, exponent within f32's normal range).
// The GPU runs this Python through torch.compile with f32 intermediates; kvaudit computes the
// exponent exactly (2^(e−1) < amax/6 <= 2^e), which a log2f could miss only when amax/6 is within an
// ulp above a power of two (never for bf16 or fp16 K/V). amax/6 is an f32 division (CUDA's Inductor
// multiplies by f32(1/6) instead: the same exponent for bf16/fp16 inputs).
// NaN or inf in a block, where SGLang's byte is an undefined float-to-uint8 cast: every code 0 (all
// comparisons fail, or x / inf = ±0), byte 0 here (the block decodes to zeros).
//
// kvaudit's row: n/16 blocks of { uint8 exponent byte; 8 bytes of codes, element 2k in the low
// nibble } = 4.5 bits per element. SGLang keeps the exponent bytes in a separate [slots,
// heads·head_dim/16] tensor: the same bytes, elsewhere.
#pragma once

#include "kv/formats/row_codec.h"

namespace kvaudit {

inline constexpr int kFp4MxBlock = 16;
inline constexpr int kFp4MxBlockBytes = 1 + kFp4MxBlock / 2;

const RowCodec& Fp4MxBlock16Codec();     // "fp4_mx_block16"
const RowCodec& Fp4MxBlock16CodecRef();  // the same bytes with the scalar twins

}  // namespace kvaudit
