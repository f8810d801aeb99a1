// A Prometheus histogram's state and its samples in the text exposition format (version 0.0.4,
// prometheus.io/docs/instrumenting/exposition_formats, "Histograms and summaries"): one
// name_bucket{labels,le="B"} line per upper bound with the CUMULATIVE count of observations <= B,
// the le="+Inf" bucket equal to name_count, then name_sum and name_count. Not thread-safe: its
// owner locks (serve/shadow_metrics.h, serve/metrics.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvaudit::serve {

// A metric family's "# HELP name help" and "# TYPE name type" lines, appended to out.
void MetricFamilyHeader(std::string& out, const char* name, const char* type, const char* help);

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // ascending upper bounds; +Inf is implicit

  void Observe(double x);
  // The sample lines (no # HELP / # TYPE: one family may hold several label sets). labels: "" or
  // 'a="x",b="y"' (already escaped), written before le.
  std::string Render(const std::string& name, const std::string& labels) const;

  double sum() const { return sum_; }
  int64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // [bounds + 1] non-cumulative; the last is (bounds.back(), +Inf)
  double sum_ = 0;
  int64_t count_ = 0;
};

// A sample value as Prometheus reads it: integers without a point, others with 15 significant
// digits (a bound prints as written: 0.1, not 0.10000000000000001).
std::string PromNumber(double x);

}  // namespace kvaudit::serve
