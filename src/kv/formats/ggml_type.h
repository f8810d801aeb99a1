// What llama.cpp's CPU backend knows of a KV cache type besides its bytes (ggml-cpu.c
// type_traits_cpu: from_float, vec_dot, vec_dot_type), for the llama.cpp attention emulation
// (kv/llamacpp). A format llama.cpp has as a cache type (`-ctk/-ctv`) carries one of these in its
// row of the format table; each format's own file defines it.
#pragma once

#include <cstdint>

#include "ops/ggml/vec_dot.h"
#include "quant/ggml_blocks.h"  // BlockCodes: a block row in expanded form

namespace kvaudit::ggml {

// VecDotKind: how the x86 vec_dot of a K block row with the quantized query combines its lanes
// (ops/ggml/vec_dot.h, shared with the weight products).

struct GgmlType {
  // type_traits_cpu[t].from_float on x86 (the cache write of ggml_set_rows): x [n] -> dst [row
  // bytes]. The reference quantizer for most types; q8_0 uses the x86 SIMD quantizer, whose
  // rounding differs (quant/q8_activation.h).
  void (*from_float)(const float* x, uint8_t* dst, int64_t n);
  // Block formats: one row -> expanded codes; nullptr for f32/f16/bf16.
  void (*to_codes)(const uint8_t* row, int64_t n, BlockCodes out);
  VecDotKind vec_dot;
};

}  // namespace kvaudit::ggml
