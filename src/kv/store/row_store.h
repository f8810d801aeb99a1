// The generic TensorStore of every per-row codec format (f32, f16, bf16, fp8 unit/calib/dynamic,
// the llama.cpp block formats, int8/int4): each token's row is packed on Append with the format's
// RowCodec (kv/formats/row_codec.h) into real bytes, [positions, row_bytes] in chunks of
// kCacheChunk positions allocated as the store fills (kv/store/chunked_rows.h); attention reads
// the packed rows with the codec's fused dot/axpy, one run of rows per chunk.
//
// Modifiers (quantized formats only; full-precision formats ignore them, kv/formats/format_table.h), each a
// function of the query position p as kv/store/tensor_store.h requires:
//   sink=S      rows t < S read in f32 by every query (attention sinks, StreamingLLM arXiv 2309.17453);
//   recent=W    rows t > p − W read in f32 by query p (KIVI's full-precision recent window, arXiv
//               2402.02750 §3.3); older rows read packed. Only a ring of W + kMaxAppendRows f32 rows
//               is kept, what a deployment holds plus one prefill chunk in flight (its slots
//               allocated in chunks as positions first reach them);
//   outliers=N  keys only: the N calibrated largest-magnitude channels are kept in f32 per token and
//               zeroed in the row before packing so they do not inflate block scales (KVQuant's
//               dense-and-sparse split, arXiv 2401.18079 §3.3, with a fixed per-head channel set);
//   prerope=1   keys only: the pre-RoPE row is packed and RoPE at position t is applied after
//               dequantization (KVQuant §3.2); Dot then materialises each packed row.
#pragma once

#include <memory>

#include "kv/formats/row_codec.h"
#include "kv/store/store_spec.h"
#include "kv/store/tensor_store.h"

namespace kvaudit {

// Rows one Append may carry beyond the recent window (the forward pass appends at most
// Forward::kMaxChunk = 512 rows per call; quant_cache.cc checks the two agree).
inline constexpr int kMaxAppendRows = 512;
inline constexpr int kMaxRowStoreHeadDim = 1024;  // per-row stack scratch in Dot

// Implemented by stores whose rows are exact f32 for every query position: attention may run the
// f32 reference kernels (kv/attention/f32_attention.h) on them directly, which keeps `k=f32,v=f32` through
// the quantized-cache path bit-identical to MakeF32Cache.
class F32RowsView {
 public:
  virtual ~F32RowsView() = default;
  virtual bool exact_f32() const = 0;  // every row is exact f32 for every query position
  // exact_f32() stores: rows [t, end of t's chunk of kCacheChunk positions), [.., head_dim] contiguous.
  virtual const float* f32_rows_from(int t) const = 0;
};

// The codec and its per-row parameters for spec's tensor (fp8 scale from the calibration, int
// group size). Dies on formats that are not row codecs (KIVI has its own store).
const RowCodec& RowCodecFor(const StoreSpec& spec);
CodecParams RowCodecParamsFor(const StoreSpec& spec);

// Needs spec.calib for fp8 scale=calib and for outliers > 0, spec.rope for pre-RoPE keys.
std::unique_ptr<TensorStore> MakeRowStore(const StoreSpec& spec);

}  // namespace kvaudit
