#include "serve/shadow.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "eval/fidelity_metrics.h"

namespace kvaudit::serve {

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

std::vector<ShadowMetrics::Position> ComparePositions(std::span<const float> served, std::span<const float> shadow,
                                                      std::span<const int32_t> tokens, size_t vocab) {
  std::vector<ShadowMetrics::Position> out;
  if (tokens.size() < 2) return out;
  const size_t n = tokens.size() - 1;
  KV_CHECK(served.size() == n * vocab && shadow.size() == n * vocab);
  BaseRow base;  // the shadow (f32) is the baseline, as in kvaudit eval
  for (size_t i = 0; i < n; ++i) {
    base.Set(shadow.subspan(i * vocab, vocab), tokens[i + 1]);
    const PositionFidelity f = base.Compare(served.subspan(i * vocab, vocab));
    out.push_back({static_cast<int>(i) + 1, f.kld, f.nll - base.nll(), f.top1});
  }
  return out;
}

Expected<std::unique_ptr<ShadowMonitor>> ShadowMonitor::Open(const ShadowOptions& o) {
  std::unique_ptr<ShadowMonitor> m(new ShadowMonitor(o));
  if (!o.log_path.empty()) {
    m->log_.open(o.log_path, std::ios::app);
    if (!m->log_) {
      return BadInput("--shadow-log " + o.log_path +
                      ": cannot be opened for appending; hint: check the folder exists and is writable");
    }
  }
  return m;
}

bool ShadowMonitor::Sample() {
  if (o_.rate <= 0) return false;
  const uint64_t i = completed_.fetch_add(1);
  return std::floor(static_cast<double>(i + 1) * o_.rate) > std::floor(static_cast<double>(i) * o_.rate);
}

void ShadowMonitor::Run(CacheGenerator& served_gen, CacheGenerator& shadow, std::span<const int32_t> tokens,
                        std::span<const float> step_logits, size_t vocab, const Served& request) {
  const size_t prompt = request.prompt_tokens;
  if (prompt == 0 || tokens.size() < 2 || step_logits.size() != (tokens.size() - prompt) * vocab) return;
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = ProcessCpuSeconds();
  // [tokens - 1, vocab]: the prefill's rows predicting prompt[1..], then the steps'. The prefill's
  // last row predicts the first generated token, as step 0's row does (the same logits): dropped.
  std::vector<float> served = served_gen.PrefillLogits(tokens.first(prompt));
  served.resize((prompt - 1) * vocab);
  served.insert(served.end(), step_logits.begin(), step_logits.end());
  const std::vector<float> logits = shadow.ForcedLogits(tokens.first(1), tokens.subspan(1));  // [tokens - 1, vocab]
  const std::vector<ShadowMetrics::Position> positions = ComparePositions(served, logits, tokens, vocab);
  const double cpu = ProcessCpuSeconds() - cpu0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  metrics_.Record(positions, cpu, wall);
  if (log_.is_open()) Log(request, tokens.size(), positions, wall, cpu);
}

void ShadowMonitor::Log(const Served& r, size_t tokens, const std::vector<ShadowMetrics::Position>& positions,
                        double seconds, double cpu_seconds) {
  const std::vector<Bucket>& buckets = metrics_.buckets();
  std::vector<ShadowBucketTotals> per(buckets.size());  // [buckets]
  for (const auto& p : positions) {
    const int b = BucketIndex(buckets, p.context);
    if (b < 0) continue;
    ShadowBucketTotals& t = per[static_cast<size_t>(b)];
    ++t.positions, t.top1 += p.top1, t.kld += p.kld, t.delta_nll += p.delta_nll;
  }
  nlohmann::json by_bucket = nlohmann::json::array();
  for (size_t b = 0; b < buckets.size(); ++b) {
    const ShadowBucketTotals& t = per[b];
    if (t.positions == 0) continue;
    const double n = static_cast<double>(t.positions);
    by_bucket.push_back({{"context", std::to_string(buckets[b].from) + "-" + std::to_string(buckets[b].to)},
                         {"positions", t.positions},
                         {"mean_kld", t.kld / n},
                         {"top1", static_cast<double>(t.top1) / n},
                         {"mean_delta_nll", t.delta_nll / n}});
  }
  const nlohmann::json line = {{"id", r.id},
                               {"prompt_tokens", r.prompt_tokens},
                               {"completion_tokens", tokens - r.prompt_tokens},
                               {"buckets", by_bucket},
                               {"shadow_seconds", seconds},
                               {"shadow_cpu_seconds", cpu_seconds},
                               {"request_seconds", r.seconds},
                               {"request_cpu_seconds", r.cpu_seconds}};
  std::lock_guard<std::mutex> lock(log_mu_);
  log_ << JsonText(line) << '\n' << std::flush;
}

}  // namespace kvaudit::serve
