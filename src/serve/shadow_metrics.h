// The shadow monitor's counters (docs/serve.md "Shadow fidelity"), by context bucket: eval's
// default buckets (eval/buckets.h: context length = tokens the prediction sees, 1-16, 17-32, ...
// doubling up to --ctx), labelled context="1-16". Rendered in the Prometheus text format:
//   kvaudit_shadow_kld{context}          histogram  KL(shadow ‖ served) per position, nats
//   kvaudit_shadow_delta_nll{context}    histogram  NLL_served − NLL_shadow of the served next token
//   kvaudit_shadow_positions_total{context}, kvaudit_shadow_top1_agree_total{context}  counters
//   kvaudit_shadow_requests_total, kvaudit_shadow_cpu_seconds_total, kvaudit_shadow_seconds_total
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "eval/buckets.h"
#include "serve/histogram.h"

namespace kvaudit::serve {

struct ShadowBucketTotals {  // one request's positions in one bucket (the JSONL log's means)
  int64_t positions = 0, top1 = 0;
  double kld = 0, delta_nll = 0;  // sums
};

class ShadowMetrics {
 public:
  explicit ShadowMetrics(int ctx);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // One request: per position its context length (1..ctx), KLD, ΔNLL and top-1 agreement.
  struct Position {
    int context = 1;
    double kld = 0, delta_nll = 0;
    bool top1 = false;
  };
  void Record(const std::vector<Position>& positions, double cpu_seconds, double wall_seconds);
  std::string Render() const;

  // Bounds: KLD spans exact (0) to broken (> 1 nat); ΔNLL is signed (a cache can be luckier).
  static std::vector<double> KldBounds();
  static std::vector<double> DeltaNllBounds();

 private:
  struct PerBucket {
    Histogram kld{KldBounds()}, delta_nll{DeltaNllBounds()};
    int64_t positions = 0, top1 = 0;
  };
  const std::vector<Bucket> buckets_;
  mutable std::mutex mu_;
  std::vector<PerBucket> per_bucket_;  // [buckets]
  int64_t requests_ = 0;
  double cpu_seconds_ = 0, wall_seconds_ = 0;
};

// 'context="1-16"'
std::string ContextLabel(const Bucket& b);

}  // namespace kvaudit::serve
