// llama.cpp's 32-element block formats as KV cache types (-ctk/-ctv q8_0, q4_0, q4_1, q5_0, q5_1,
// iq4_nl). The bytes and the reference arithmetic are the number format's (quant/<format>.cc,
// bit-exact with ggml-quants.c); the cache adds the codecs attention reads the rows through.
// Bits per element: q8_0 8.5, q4_0 4.5, q4_1 5, q5_0 5.5, q5_1 6, iq4_nl 4.5.
#pragma once

#include "kv/formats/ggml_type.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

// For each format: <Fmt>Codec() runs the active kernel path's dot/axpy on the rows; <Fmt>CodecRef()
// the same bytes with the scalar twins (kv/formats/codec_kernels.h); <Fmt>Ggml() is llama.cpp's
// type traits: the reference quantizer writes the cache (q8_0: the x86 quantize_row_q8_0, not
// _ref), and K rows are dotted with a q8_0 query (q4_1, q5_1: q8_1).
const RowCodec& Q8_0Codec();
const RowCodec& Q8_0CodecRef();
const ggml::GgmlType& Q8_0Ggml();

const RowCodec& Q4_0Codec();
const RowCodec& Q4_0CodecRef();
const ggml::GgmlType& Q4_0Ggml();

const RowCodec& Q4_1Codec();
const RowCodec& Q4_1CodecRef();
const ggml::GgmlType& Q4_1Ggml();

const RowCodec& Q5_0Codec();
const RowCodec& Q5_0CodecRef();
const ggml::GgmlType& Q5_0Ggml();

const RowCodec& Q5_1Codec();
const RowCodec& Q5_1CodecRef();
const ggml::GgmlType& Q5_1Ggml();

const RowCodec& Iq4NlCodec();
const RowCodec& Iq4NlCodecRef();
const ggml::GgmlType& Iq4NlGgml();

}  // namespace kvaudit
