// The unit a KV format implements: the store of ONE tensor (K or V) of one (layer, KV head).
// Rows (head_dim values per token) are appended in position order; attention reads them back as
// a query at position p sees them. "As p sees them" matters because protections move: a row in
// the recent full-precision window of query p is quantized for a later query, and a KIVI key
// group is quantized only once it is complete. Defining every read as a function of p makes a
// teacher-forced prefill compute exactly what token-by-token decode computes.
//
// Stores hold real packed bytes (BytesFor reports what a deployment of the format holds;
// bytes_reserved what the store itself has allocated, chunk-rounded).
// Rotation (Hadamard) is applied by the attention layer around the store, so stores see rows
// already in the rotated basis.
#pragma once

#include <cstdint>

namespace kvaudit {

class TensorStore {
 public:
  virtual ~TensorStore() = default;

  // Appends positions [pos0, pos0 + n): row i at rows + i * stride (head_dim floats, keys after
  // RoPE). pre_rope: the same rows before RoPE (keys only; nullptr for values).
  virtual void Append(int pos0, int n, const float* rows, int64_t stride, const float* pre_rope,
                      int64_t pre_stride) = 0;
  virtual void Reset() = 0;      // empty, keep allocations
  virtual int size() const = 0;  // positions appended

  // Rows t < StableEnd(p) are read identically by every query at a position >= p (so a prefill
  // tile may materialise them once); rows >= StableEnd(p) may depend on the query position.
  virtual int StableEnd(int p) const = 0;
  // Rows [t0, t1) as a query at position p sees them: out [t1 - t0, head_dim].
  virtual void Materialize(int p, int t0, int t1, float* out) const = 0;
  // Fused reads, no f32 row materialised: out[t - t0] = q · row_t for t in [t0, t1).
  virtual void Dot(const float* q, int p, int t0, int t1, float* out) const = 0;
  // Dot for n_q queries at once (the G query heads of one KV head): (out + j·out_stride)[t - t0] =
  // q_j · row_t with q_j = q + j·q_stride. Bit-identical to Dot per query; a store may decode each
  // packed row once for all n_q queries instead of n_q times.
  virtual void DotMulti(const float* q, int64_t q_stride, int n_q, int p, int t0, int t1, float* out,
                        int64_t out_stride) const {
    for (int j = 0; j < n_q; ++j) Dot(q + j * q_stride, p, t0, t1, out + j * out_stride);
  }
  // acc[0..head_dim) += Σ_t w[t - t0] · row_t for t in [t0, t1).
  virtual void WeightedSum(const float* w, int p, int t0, int t1, float* acc) const = 0;
  // WeightedSum for n_w weight rows at once (decode attention: the G query heads of one KV head):
  // acc + j·acc_stride += Σ_t (w + j·w_stride)[t - t0] · row_t for j < n_w. Every accumulator gets
  // exactly WeightedSum's arithmetic (bit-identical); a store may interleave the j so the n_w
  // accumulation chains overlap instead of each row's store→load→fma chain running n_w times in
  // series (in bench/attention_bench that chain, not memory, bounded decode over packed rows:
  // BENCHMARKS.md "KV formats: decode attention bandwidth").
  virtual void WeightedSumMulti(const float* w, int64_t w_stride, int n_w, int p, int t0, int t1, float* acc,
                                int64_t acc_stride) const {
    for (int j = 0; j < n_w; ++j) WeightedSum(w + j * w_stride, p, t0, t1, acc + j * acc_stride);
  }

  // Bytes a deployment of this format holds for n_pos tokens (packed rows, scales, metadata, and
  // the full-precision rows its protections keep).
  virtual uint64_t BytesFor(int n_pos) const = 0;

  // The store's own memory: rows live in chunks of positions (kv/store/chunked_rows.h)
  // allocated by Append as it needs them, or up front by Reserve (false when an allocation
  // failed); Reset keeps them. bytes_reserved: held now, chunks and fixed buffers (rings, sink
  // rows); StorageFor(n): held once positions [0, n) are reserved (at least bytes_reserved()).
  virtual bool Reserve(int n_pos) = 0;
  virtual uint64_t bytes_reserved() const = 0;
  virtual uint64_t StorageFor(int n_pos) const = 0;
};

}  // namespace kvaudit
