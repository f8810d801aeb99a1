// What a ggml block format's kernel section needs, per kernel path (base/isa_passes.h): the dot
// trees, the row-kernel template over a block decoder, and the block decoding helpers. No include
// guard: a format's pass section includes it first, inside its pass namespace.
#include "ops/dot_simd.inl.h"
#include "kv/formats/codec_kernels_simd.inl.h"
#include "kv/formats/ggml_blocks_simd.inl.h"
