// The generic TensorStore of every per-row codec format (f32, f16, bf16, fp8 unit/calib/dynamic,
// the llama.cpp block formats, int8/int4): each token's row is packed on Append with the format's
// RowCodec (kv/formats/row_codec.h) into real bytes, [max_positions, row_bytes]; attention reads the packed
// rows with the codec's fused dot/axpy.
//
// Modifiers (quantized formats only; full-precision formats ignore them, kv/formats/format_table.h), each a
// function of the query position p as kv/store/tensor_store.h requires:
//   sink=S      rows t < S read in f32 by every query (attention sinks, StreamingLLM arXiv 2309.17453);
//   recent=W    rows t > p − W read in f32 by query p (KIVI's full-precision recent window, arXiv
//               2402.02750 §3.3); older rows read packed. Only a ring of W + kMaxAppendRows f32 rows
//               is kept, what a deployment holds plus one prefill chunk in flight;
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
  virtual const float* f32_rows() const = 0;  // [max_positions, head_dim]
};

// The codec and its per-row parameters for spec's tensor (fp8 scale from the calibration, int
// group size). Dies on formats that are not row codecs (KIVI has its own store).
const RowCodec& RowCodecFor(const StoreSpec& spec);
CodecParams RowCodecParamsFor(const StoreSpec& spec);

// Needs spec.calib for fp8 scale=calib and for outliers > 0, spec.rope for pre-RoPE keys.
std::unique_ptr<TensorStore> MakeRowStore(const StoreSpec& spec);

}  // namespace kvaudit
