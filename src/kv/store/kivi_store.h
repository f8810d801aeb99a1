// KIVI (Liu et al., "KIVI: A Tuning-Free Asymmetric 2bit Quantization for KV Cache", arXiv 2402.02750;
// reference code jy-yuan/KIVI; notes: docs/research/llamacpp-kv-notes.md §5.2) as a TensorStore:
// `kivi2` / `kivi4` (b = 2 / 4 bits), asymmetric min/max groups (kv/formats/asym_group_quant.h), scale and
// min kept as f16.
//   Keys   — per CHANNEL over groups of G = head.KiviGroup() consecutive tokens (KIVI's
//            triton_quantize_and_pack_along_last_dim on Kᵀ).
//   Values — per TOKEN over groups of G consecutive channels (KIVI's quant_and_pack_vcache).
// Full-precision residual, as a function of the query position p (R = head.Recent(), R % G == 0):
//   keys:   rows t <  floor(p / R)·R are quantized, rows [floor(p / R)·R, p] (1..R rows) are f32;
//   values: the newest min(p + 1, R) rows are f32, older rows quantized per token.
// This is exactly what KIVI's DECODE loop (models/llama_kivi.py) shows the query at p: the new key is
// appended to key_states_full before attention and the R full keys are flushed (quantized) after the
// attention of the step that filled them, so the f32 key count cycles 1..R; values keep a sliding
// exact window of R. KIVI's PREFILL differs: it attends the whole prompt in full precision and only
// then quantizes the first L − (L mod R) keys (and L − R values). kvaudit uses the streaming-decode
// semantics for prefill too, so a teacher-forced prefill computes what token-by-token decode computes
// (docs/formats.md "Prefill == decode"), i.e. every scored position sees the cache KIVI's decode
// would hold at that position — the state a long generation actually runs in.
// Not handled here: sink / outlier / pre-RoPE modifiers (the cache factory must not combine them
// with KIVI, or must wrap this store).
//
// Storage (per layer × KV head × tensor), in chunks of about kCacheChunk positions allocated as the
// store fills (kv/store/chunked_rows.h; a key chunk holds a power of two of whole groups):
//   keys:   packed groups, appended as each G-token group completes:
//           codes [n_groups][head_dim][G·b/8 B] (channel c's G codes contiguous, first token in the
//           low bits) + scale/min [n_groups][head_dim][2] f16;
//   values: packed rows, written on append: codes [n][head_dim·b/8 B] + scale/min [n][head_dim/G][2] f16;
//   both:   a bounded f32 ring [capacity][head_dim] with the rows some future query may still read
//           in full precision (capacity: a power of two ≥ R + kMaxAppendRows, the largest Append;
//           its slots are allocated in chunks as positions first reach them).
// Fused reads: keys through DotMulti (Dot = one query), values through WeightedSumMulti (WeightedSum =
// one weight row), packed data by the kernels of kv/store/kivi_kernels.h, f32 rows by DotF32 / an fma axpy;
// a score depends on its token's group only and an accumulator gets one fma per row in ascending t,
// so multi reads equal single reads and any split of [t0, t1) gives the same bits.
// BytesFor(n) counts what KIVI holds after n tokens: keys floor(n/R)·R packed + (n mod R) f32 rows;
// values max(0, n − R) packed + min(n, R) f32 rows; plus the f16 scale/min pairs.
#pragma once

#include <memory>

#include "kv/store/store_spec.h"
#include "kv/store/tensor_store.h"

namespace kvaudit {

// spec.format() must be kivi2 or kivi4; head_dim % G == 0, R % G == 0, R >= G (checked).
std::unique_ptr<TensorStore> MakeKiviStore(const StoreSpec& spec);

}  // namespace kvaudit
