#include "eval/fidelity_stats.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {

void FidelityCollector::Add(size_t slot, double kld, double nll_base, double nll, double dp, bool top1,
                            bool top5_drop) {
  kld_.push_back(kld);
  dp_.push_back(dp);
  win_sum_[slot] += kld;
  win_count_[slot] += 1;
  nll_base_sum_ += nll_base;
  nll_sum_ += nll;
  dp_sq_sum_ += dp * dp;
  top1_ += top1;
  top5_drop_ += top5_drop;
}

FidelitySummary FidelityCollector::Summarize(const BootstrapOptions& bootstrap) const {
  FidelitySummary s;
  s.tokens = static_cast<int64_t>(kld_.size());
  if (s.tokens == 0) return s;
  const double n = static_cast<double>(s.tokens);
  double kld_sum = 0, dp_sum = 0;
  for (double x : kld_) kld_sum += x;
  for (double x : dp_) dp_sum += x;
  s.kld_mean = kld_sum / n;
  s.kld_ci95 = BootstrapMeanCi(win_sum_, win_count_, bootstrap.replicates, bootstrap.seed);
  std::vector<double> sorted = kld_;  // [positions]
  std::sort(sorted.begin(), sorted.end());
  s.kld_median = SortedQuantile(sorted, 0.5);
  s.kld_p90 = SortedQuantile(sorted, 0.90);
  s.kld_p99 = SortedQuantile(sorted, 0.99);
  s.kld_p999 = SortedQuantile(sorted, 0.999);
  s.kld_max = sorted.back();
  s.top1_agree = static_cast<double>(top1_) / n;
  s.top5_drop = static_cast<double>(top5_drop_) / n;
  s.nll_base_mean = nll_base_sum_ / n;
  s.nll_mean = nll_sum_ / n;
  s.ppl_base = std::exp(s.nll_base_mean);
  s.ppl = std::exp(s.nll_mean);
  s.ppl_ratio = std::exp(s.nll_mean - s.nll_base_mean);
  s.delta_ppl = s.ppl - s.ppl_base;
  sorted = dp_;
  std::sort(sorted.begin(), sorted.end());
  s.dp_mean = dp_sum / n;
  s.dp_p01 = SortedQuantile(sorted, 0.01);
  s.dp_p99 = SortedQuantile(sorted, 0.99);
  s.dp_rms = std::sqrt(dp_sq_sum_ / n);
  return s;
}

std::optional<int> SafeContext(const std::vector<double>& sum, const std::vector<double>& count, double threshold,
                               int width) {
  KV_CHECK(sum.size() == count.size() && width >= 1);
  const int n = static_cast<int>(sum.size());
  std::vector<double> psum(static_cast<size_t>(n) + 1, 0.0), pcount(static_cast<size_t>(n) + 1, 0.0);  // [n+1] prefix
  for (int i = 0; i < n; ++i) {
    psum[static_cast<size_t>(i) + 1] = psum[static_cast<size_t>(i)] + sum[static_cast<size_t>(i)];
    pcount[static_cast<size_t>(i) + 1] = pcount[static_cast<size_t>(i)] + count[static_cast<size_t>(i)];
  }
  std::optional<int> first;
  for (int p = n - 1; p >= 0; --p) {
    if (count[static_cast<size_t>(p)] == 0) continue;  // no data at this length (before --score-from)
    const int a = std::max(0, p - width / 2), b = std::min(n, p + (width + 1) / 2);  // [a, b)
    const double c = pcount[static_cast<size_t>(b)] - pcount[static_cast<size_t>(a)];
    const double smoothed = (psum[static_cast<size_t>(b)] - psum[static_cast<size_t>(a)]) / c;
    if (!(smoothed > threshold)) break;
    first = p;
  }
  return first;
}

ConfigSummary SummarizeConfig(const std::vector<WindowRecord>& windows, size_t config, const AggregateOptions& o) {
  const size_t nw = windows.size();
  FidelityCollector overall(nw);
  std::vector<FidelityCollector> buckets(o.buckets.size(), FidelityCollector(nw));
  constexpr int kClasses = kNumTokenClasses + 1;  // + rare
  double class_kld[kClasses] = {}, class_top1[kClasses] = {}, class_n[kClasses] = {};
  int max_len = o.buckets.empty() ? 0 : o.buckets.back().to;
  for (const WindowRecord& w : windows) max_len = std::max<int>(max_len, w.first_pos + static_cast<int>(w.size()));
  std::vector<double> len_sum(static_cast<size_t>(max_len) + 1, 0.0), len_count(len_sum.size(), 0.0);  // [max_len+1]
  for (size_t slot = 0; slot < nw; ++slot) {
    const WindowRecord& w = windows[slot];
    KV_CHECK(config < w.configs.size());
    const WindowRecord::Config& c = w.configs[config];
    for (size_t i = 0; i < w.size(); ++i) {
      const int len = w.first_pos + static_cast<int>(i) + 1;  // context length of the prediction
      const double kld = c.kld[i];
      overall.Add(slot, kld, w.nll_base[i], c.nll[i], c.dp[i], c.top1[i], c.top5_drop[i]);
      const int b = BucketIndex(o.buckets, len);
      if (b >= 0) buckets[static_cast<size_t>(b)].Add(slot, kld, w.nll_base[i], c.nll[i], c.dp[i], c.top1[i], c.top5_drop[i]);
      len_sum[static_cast<size_t>(len)] += kld;
      len_count[static_cast<size_t>(len)] += 1;
      const auto tok = static_cast<size_t>(w.tokens[i]);
      if (o.classes && tok < o.classes->size()) {
        const auto k = static_cast<size_t>((*o.classes)[tok]);
        class_kld[k] += kld, class_top1[k] += c.top1[i], class_n[k] += 1;
      }
      if (o.rare && tok < o.rare->size() && (*o.rare)[tok]) {
        class_kld[kNumTokenClasses] += kld, class_top1[kNumTokenClasses] += c.top1[i], class_n[kNumTokenClasses] += 1;
      }
    }
  }
  ConfigSummary s;
  s.overall = overall.Summarize(o.bootstrap);
  for (const FidelityCollector& b : buckets) s.buckets.push_back(b.Summarize(o.bootstrap));
  for (int k = 0; k < kClasses; ++k) {
    if (k < kNumTokenClasses ? !o.classes : !o.rare) continue;
    ClassSummary cs;
    cs.name = k < kNumTokenClasses ? TokenClassName(static_cast<TokenClass>(k)) : "rare";
    cs.tokens = static_cast<int64_t>(class_n[k]);
    if (class_n[k] > 0) cs.kld_mean = class_kld[k] / class_n[k], cs.top1_agree = class_top1[k] / class_n[k];
    s.classes.push_back(cs);
  }
  s.safe_context = SafeContext(len_sum, len_count, o.kld_threshold, o.smooth_width);
  return s;
}

}  // namespace kvaudit
