#include "serve/metrics.h"

#include <cstdio>

#include "serve/histogram.h"

namespace kvaudit::serve {
namespace {

// 15 significant digits: bucket bounds print as written (0.1, not 0.10000000000000001).
std::string Number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", x);
  return buf;
}

}  // namespace

void Metrics::RecordRequest(const std::string& endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
  if (seconds < 0) return;
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  ++bucket_counts_[b];
  duration_sum_ += seconds;
  ++duration_count_;
}

void Metrics::AddTokens(int64_t prompt, int64_t completion) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt;
  completion_tokens_ += completion;
}

void Metrics::RecordCancel(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++cancelled_[reason];
}

std::string Metrics::Render(size_t queue_depth, size_t running) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  MetricFamilyHeader(out, "kvaudit_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_) {
    out += "kvaudit_requests_total{endpoint=\"" + key.first + "\",code=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  }
  MetricFamilyHeader(out, "kvaudit_prompt_tokens_total", "counter", "Prompt tokens of completed completions.");
  out += "kvaudit_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  MetricFamilyHeader(out, "kvaudit_completion_tokens_total", "counter", "Generated tokens of completed completions.");
  out += "kvaudit_completion_tokens_total " + std::to_string(completion_tokens_) + "\n";
  MetricFamilyHeader(out, "kvaudit_completions_cancelled_total", "counter",
                     "Completions stopped before their end, by reason.");
  for (const auto& [reason, n] : cancelled_) {
    out += "kvaudit_completions_cancelled_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  }
  MetricFamilyHeader(out, "kvaudit_queue_depth", "gauge", "Completions waiting for a worker.");
  out += "kvaudit_queue_depth " + std::to_string(queue_depth) + "\n";
  MetricFamilyHeader(out, "kvaudit_requests_running", "gauge", "Completions a worker is running.");
  out += "kvaudit_requests_running " + std::to_string(running) + "\n";
  MetricFamilyHeader(out, "kvaudit_request_duration_seconds", "histogram", "Wall time of routed requests.");
  int64_t cumulative = 0;
  for (size_t b = 0; b < kBuckets.size(); ++b) {
    cumulative += bucket_counts_[b];
    out += "kvaudit_request_duration_seconds_bucket{le=\"" + Number(kBuckets[b]) + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  cumulative += bucket_counts_.back();
  out += "kvaudit_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += "kvaudit_request_duration_seconds_sum " + Number(duration_sum_) + "\n";
  out += "kvaudit_request_duration_seconds_count " + std::to_string(duration_count_) + "\n";
  return out;
}

}  // namespace kvaudit::serve
