// GET /metrics: counters of the server in Prometheus' text exposition format (version 0.0.4:
// "# HELP", "# TYPE", one sample per line, histograms as cumulative _bucket{le=...}, _sum, _count;
// prometheus.io/docs/instrumenting/exposition_formats). Names are prefixed kvaudit_.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace kvaudit::serve {

class Metrics {
 public:
  // One answered request: its endpoint (a route path, or "other"), HTTP status, and its wall time
  // in seconds (< 0: not timed, e.g. refused before routing).
  void RecordRequest(const std::string& endpoint, int status, double seconds);
  void AddTokens(int64_t prompt, int64_t completion);
  // A completion that stopped before its end: "client_disconnect" (a stream's reader went away),
  // "timeout" or "shutdown".
  void RecordCancel(const std::string& reason);
  // The exposition text; queue_depth and running are sampled by the caller.
  std::string Render(size_t queue_depth, size_t running) const;

  // Request duration buckets, seconds (upper bounds; +Inf is implicit).
  static constexpr std::array<double, 10> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30};

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;   // (endpoint, status) -> count
  std::array<int64_t, kBuckets.size() + 1> bucket_counts_{};  // non-cumulative; last is +Inf
  double duration_sum_ = 0;
  int64_t duration_count_ = 0;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::map<std::string, int64_t> cancelled_;  // reason -> count
};

}  // namespace kvaudit::serve
