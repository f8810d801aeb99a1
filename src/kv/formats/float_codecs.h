// The full-precision cache formats. f32: the exact reference every quantized format is measured
// against (32 bits per element, the input bytes unchanged). f16: IEEE binary16, round to nearest
// even, overflow to ±inf (base/half.h, bit-exact with ggml_compute_fp32_to_fp16: llama.cpp's
// default `-ctk f16`). bf16: f32 with the low 16 mantissa bits rounded off to nearest even
// (bit-exact with ggml's GGML_FP32_TO_BF16: `-ctk bf16`). No metadata.
#pragma once

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

// For each: <Fmt>Codec() runs the active kernel path's dot/axpy (AVX-512 or AVX2 loads that widen
// exactly), <Fmt>CodecRef() the same bytes with the scalar twins, <Fmt>Ggml() llama.cpp's type
// traits (from_float = the codec's quantize; no integer dot: Q is rounded to the type instead).
const RowCodec& F32Codec();
const RowCodec& F32CodecRef();
const ggml::GgmlType& F32Ggml();

const RowCodec& F16Codec();
const RowCodec& F16CodecRef();
const ggml::GgmlType& F16Ggml();

const RowCodec& BF16Codec();
const RowCodec& BF16CodecRef();
const ggml::GgmlType& BF16Ggml();

}  // namespace kvaudit
