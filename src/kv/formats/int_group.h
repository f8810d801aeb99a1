// int8 / int4 rows: per-token asymmetric min/max quantization in groups of CodecParams::group
// consecutive elements along the row, as Hugging Face transformers' QuantizedCache does with quanto
// at its default axis 0 (`reshape(-1, q_group_size)` of the contiguous [B, H, T, D] tensor: groups
// run along head_dim within one token; notes §5.1). The quantizer is kv/formats/asym_group_quant.h
// (scale = (max − min)/(2^b − 1), float min as the zero point, round half to even, clamp).
//
// Row layout: n / group blocks, each
//   { f16 scale; f16 min; codes[group·b/8] }      (b = 8: one byte per code;
//                                                  b = 4: two per byte, element 2j in the low nibble)
// so bits per element = b + 32/group (int4 at group 32: 5.0, the size of llama.cpp q4_1; at HF's
// default group 64: 4.5). scale and min are f16 as in transformers with an fp16 model dtype.
#pragma once

#include <cstdint>

#include "kv/formats/row_codec.h"

namespace kvaudit {

// Whether a row of n elements can use `group`: group must be even (int4 packs pairs within a group)
// and divide the row. The cache configuration (kv/config) reports an error when this is false.
inline bool IntGroupValid(int64_t n, int group) { return n > 0 && group >= 2 && group % 2 == 0 && n % group == 0; }

const RowCodec& Int8Codec();  // "int8"
const RowCodec& Int4Codec();  // "int4"
// The same formats with the scalar dot/axpy the AVX-512 twins are tested against.
const RowCodec& Int8CodecRef();
const RowCodec& Int4CodecRef();

}  // namespace kvaudit
