// f32 rows: the exact reference format (32 bits per element, the input bytes unchanged). Every
// quantized format is measured against it.
#pragma once

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& F32Codec();       // dot/axpy: AVX-512 where compiled (-march with AVX-512F), else scalar
const RowCodec& F32CodecRef();    // the same bytes with the scalar dot/axpy the SIMD twin is tested against
const ggml::GgmlType& F32Ggml();  // llama.cpp's GGML_TYPE_F32: from_float = Quantize, no integer dot

}  // namespace kvaudit
