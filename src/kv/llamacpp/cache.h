// `engine=llama.cpp`: a KV cache that stores K and V the way llama.cpp's CPU backend writes them and
// attends the way its CPU flash attention computes (docs/research/llamacpp-kv-notes.md §1.4, §2, §3),
// so kvaudit's numbers can be checked against llama-perplexity's (docs/metrics.md "Agreement").
//
// Write path (llama-kv-cache.cpp cpy_k/cpy_v -> ggml_set_rows -> type_traits_cpu[type].from_float,
// which each format's GgmlType carries in the format table):
//   q8_0: the x86 quantize_row_q8_0 (127/amax, round half to even: QuantizeQ8_0RowX86);
//   q4_0, q4_1, q5_0, q5_1, iq4_nl: the *_ref quantizers (kv/formats/*.h codecs; iq4_nl ntry = -1);
//   f16 / bf16: RNE conversion; f32: as is.
// Channel order: for llama/mistral, llama.cpp's GGUF has Q/K rows permuted for its
//   interleaved (NORM) RoPE, so K is quantized, Q converted to q8 and both rotated in the order
//   [c0, c_{hd/2}, c1, c_{hd/2+1}, ...] of kvaudit's HF-order head vector; ReadRows undoes it.
// Rotation (llama-graph.cpp build_attn + llama-kv-cache.cpp attn_rot_k/attn_rot_v, PR #21038):
//   rot=auto or rot=1: K rotated iff K's format is quantized and head_dim % 64 == 0 (block
//   LlamaCppRotationBlocks(hd).k), V likewise with block .v, gated independently. Q and K are
//   rotated after RoPE (Q·K unchanged up to rounding), V before the write, and the attention output
//   is rotated back with the V transform before o_proj. rot=0: nothing rotated
//   (LLAMA_ATTN_ROT_DISABLE=1). All rotations f32, as the ggml_mul_mat with the f32 matrix.
// Attention: kv/llamacpp/attention.h. Quantized K or V -> the _one_chunk path for any number of
// queries (prefill and decode), so prefill and token-by-token decode perform the same arithmetic per
// query row; K = V = f16 (or f32) with >= 64 queries -> the tiled path (Q f32, no f16 accumulator),
// fewer queries -> _one_chunk (Q rounded to f16, V summed in an fp16 accumulator), as llama.cpp.
// Formats may differ per layer (and per KV head); sink/recent/outlier/pre-RoPE modifiers do not exist
// in llama.cpp and are rejected by CacheConfig::Validate before this is built.
#pragma once

#include <memory>

#include "kv/config/cache_config.h"
#include "model/config.h"
#include "model/kv_cache.h"

namespace kvaudit {

// Storage: per (layer, KV head) K and V rows [positions, row bytes of the format] in llama.cpp's
// block layout (q8_0 34 B / 32 elements, ..., f16 2 B / element), in chunks of kCacheChunk
// positions allocated as the cache fills or by Reserve (kv/store/chunked_rows.h); max_positions is
// the hard limit.
std::unique_ptr<KvCache> MakeLlamaCppCache(const ModelConfig& config, const CacheConfig& cache_config,
                                           int max_positions);

}  // namespace kvaudit
