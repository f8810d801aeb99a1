#include "serve/shadow_metrics.h"

namespace kvaudit::serve {

std::string ContextLabel(const Bucket& b) {
  return "context=\"" + std::to_string(b.from) + "-" + std::to_string(b.to) + "\"";
}

std::vector<double> ShadowMetrics::KldBounds() { return {0, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10}; }
std::vector<double> ShadowMetrics::DeltaNllBounds() { return {-1, -0.1, -0.01, -0.001, 0, 0.001, 0.01, 0.1, 1}; }

ShadowMetrics::ShadowMetrics(int ctx) : buckets_(DefaultBuckets(ctx)), per_bucket_(buckets_.size()) {}

void ShadowMetrics::Record(const std::vector<Position>& positions, double cpu_seconds, double wall_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Position& p : positions) {
    const int b = BucketIndex(buckets_, p.context);
    if (b < 0) continue;  // beyond --ctx: cannot happen for a request that fitted
    PerBucket& pb = per_bucket_[static_cast<size_t>(b)];
    pb.kld.Observe(p.kld);
    pb.delta_nll.Observe(p.delta_nll);
    ++pb.positions;
    pb.top1 += p.top1 ? 1 : 0;
  }
  ++requests_;
  cpu_seconds_ += cpu_seconds;
  wall_seconds_ += wall_seconds;
}

std::string ShadowMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  MetricFamilyHeader(out, "kvaudit_shadow_requests_total", "counter", "Completions re-run on the f32 shadow cache.");
  out += "kvaudit_shadow_requests_total " + std::to_string(requests_) + "\n";
  MetricFamilyHeader(out, "kvaudit_shadow_cpu_seconds_total", "counter", "Process CPU seconds spent in shadow runs.");
  out += "kvaudit_shadow_cpu_seconds_total " + PromNumber(cpu_seconds_) + "\n";
  MetricFamilyHeader(out, "kvaudit_shadow_seconds_total", "counter", "Wall seconds workers spent in shadow runs.");
  out += "kvaudit_shadow_seconds_total " + PromNumber(wall_seconds_) + "\n";
  // Only buckets a request reached, so an idle server's exposition stays short.
  auto each = [&](auto&& line) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      if (per_bucket_[b].positions > 0) line(ContextLabel(buckets_[b]), per_bucket_[b]);
    }
  };
  MetricFamilyHeader(out, "kvaudit_shadow_positions_total", "counter",
                     "Positions compared with the shadow, by context bucket.");
  each([&](const std::string& l, const PerBucket& pb) {
    out += "kvaudit_shadow_positions_total{" + l + "} " + std::to_string(pb.positions) + "\n";
  });
  MetricFamilyHeader(out, "kvaudit_shadow_top1_agree_total", "counter",
                     "Positions whose served top-1 token is the shadow's.");
  each([&](const std::string& l, const PerBucket& pb) {
    out += "kvaudit_shadow_top1_agree_total{" + l + "} " + std::to_string(pb.top1) + "\n";
  });
  MetricFamilyHeader(out, "kvaudit_shadow_kld", "histogram", "KL(shadow || served) per position, nats.");
  each([&](const std::string& l, const PerBucket& pb) { out += pb.kld.Render("kvaudit_shadow_kld", l); });
  MetricFamilyHeader(out, "kvaudit_shadow_delta_nll", "histogram",
                     "NLL of the served next token, served minus shadow, nats.");
  each([&](const std::string& l, const PerBucket& pb) { out += pb.delta_nll.Render("kvaudit_shadow_delta_nll", l); });
  return out;
}

}  // namespace kvaudit::serve
