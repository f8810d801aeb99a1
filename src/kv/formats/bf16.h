// bf16 rows: bfloat16 (f32 with the low 16 mantissa bits rounded off to nearest even; base/half.h,
// bit-exact with ggml's GGML_FP32_TO_BF16, i.e. llama.cpp's `-ctk bf16`). 16 bits per element.
#pragma once

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& BF16Codec();       // dot/axpy: AVX-512 (widen + shift) where compiled, else scalar
const RowCodec& BF16CodecRef();    // the same bytes with the scalar dot/axpy (reference for the SIMD twin)
const ggml::GgmlType& BF16Ggml();  // llama.cpp's GGML_TYPE_BF16: from_float = Quantize, no integer dot

}  // namespace kvaudit
