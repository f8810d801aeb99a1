// Attention-level diagnosis of `kvaudit eval`: per configuration, layer, KV head and
// context bucket, sums over sampled query positions of how the cache changes what attention reads
// and computes. Definitions: docs/metrics.md "Attention-level diagnosis".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvaudit {

// Sums for one (layer, KV head, context bucket). Relative errors are pooled (ratio of sums), so
// long rows and short rows weigh by their size, not by their count.
struct AttnCell {
  double k_err2 = 0, k_ref2 = 0;      // Σ ‖k̂ − k‖², Σ ‖k‖² over the rows each sampled query reads
  double v_err2 = 0, v_ref2 = 0;      // the same for V
  double out_err2 = 0, out_ref2 = 0;  // Σ ‖ô − o‖², Σ ‖o‖² over sampled (query position, query head)
  double kl = 0, tv = 0;              // Σ KL(a ‖ â), Σ ½‖a − â‖₁ of the attention weights
  double sink = 0, sink_moved = 0;    // Σ a₀ (baseline weight on position 0), Σ |â₀ − a₀|
  int64_t queries = 0;                // sampled (query position, query head) pairs

  void Add(const AttnCell& o);
};

// One row of the report: a (layer, KV head) over all buckets, plus its per-bucket series.
struct AttnSummary {
  int layer = 0, kv_head = 0;
  int window = 0;  // the layer's sliding window, 0 = global (models with sliding layers)
  int64_t queries = 0;
  double k_rel_err = 0, v_rel_err = 0, attn_kl = 0, attn_tv = 0, out_rel_err = 0;
  double sink_mass = 0, sink_moved = 0;  // means over queries
  struct Bucket {
    int bucket = 0;  // index into the eval buckets
    int64_t queries = 0;
    double k_rel_err = 0, v_rel_err = 0, attn_kl = 0, out_rel_err = 0;
  };
  std::vector<Bucket> buckets;  // non-empty buckets, ascending
  // Context length where out_rel_err grows: the first bucket whose out_rel_err is at least twice
  // the first non-empty bucket's (0 when it never doubles).
  int grows_from = 0;
};

// Index of a cell in a flat [n_layers, n_kv_heads, n_buckets] vector.
inline size_t AttnIndex(int layer, int kv_head, int bucket, int n_kv_heads, int n_buckets) {
  return (static_cast<size_t>(layer) * n_kv_heads + kv_head) * n_buckets + bucket;
}

// cells: [n_layers, n_kv_heads, n_buckets] summed over windows; bucket_from: [n_buckets] first
// context length of each bucket (for grows_from). Returns one summary per (layer, KV head) that
// saw a query, in (layer, head) order.
std::vector<AttnSummary> SummarizeAttention(const std::vector<AttnCell>& cells, int n_layers, int n_kv_heads,
                                            const std::vector<int>& bucket_from);
// The `n` worst by out_rel_err (ties: lower layer, then head), worst first.
std::vector<AttnSummary> WorstHeads(std::vector<AttnSummary> all, size_t n);

}  // namespace kvaudit
