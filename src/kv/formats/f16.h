// f16 rows: IEEE binary16, round to nearest even, overflow to ±inf (base/half.h, bit-exact with
// ggml_compute_fp32_to_fp16, i.e. llama.cpp's default `-ctk f16`). 16 bits per element, no metadata.
#pragma once

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

const RowCodec& F16Codec();       // dot/axpy: AVX-512 (_mm512_cvtph_ps) where compiled, else scalar
const RowCodec& F16CodecRef();    // the same bytes with the scalar dot/axpy (reference for the SIMD twin)
const ggml::GgmlType& F16Ggml();  // llama.cpp's GGML_TYPE_F16: from_float = Quantize, no integer dot

}  // namespace kvaudit
