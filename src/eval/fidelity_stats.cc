#include "eval/fidelity_stats.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {

void FidelityCollector::Add(size_t slot, double kld, double nll_base, double nll, double dp, bool top1,
                            bool top5_drop) {
  KV_CHECK(slot >= last_slot_);
  if (totals_.count[slot] == 0) first_[slot] = kld_.size();
  last_slot_ = slot;
  totals_.Add(slot, kld, top1, nll - nll_base);
  kld_.push_back(kld);
  dp_.push_back(dp);
  nll_base_sum_ += nll_base;
  nll_sum_ += nll;
  dp_sq_sum_ += dp * dp;
  top1_ += top1;
  top5_drop_ += top5_drop;
}

FidelitySummary FidelityCollector::Summarize(const BootstrapOptions& bootstrap, bool with_p99_interval) const {
  FidelitySummary s;
  const std::vector<double>& kld = kld_;
  s.tokens = static_cast<int64_t>(kld.size());
  if (s.tokens == 0) return s;
  const double n = static_cast<double>(s.tokens);
  double kld_sum = 0, dp_sum = 0;
  for (double x : kld) kld_sum += x;
  for (double x : dp_) dp_sum += x;
  s.kld_mean = kld_sum / n;
  s.windows = totals_.windows();
  const KldByWindow positions{&kld_, &first_};
  const FidelityIntervals ci =
      IntervalsOf(totals_, bootstrap.replicates, bootstrap.seed, with_p99_interval ? &positions : nullptr);
  s.kld_ci95 = ci.kld_mean, s.kld_p99_ci95 = ci.kld_p99, s.top1_agree_ci95 = ci.top1_agree;
  s.ppl_ratio_ci95 = ci.ppl_ratio;
  s.totals = totals_;
  std::vector<double> sorted = kld;  // [positions]
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

SafeRange SafeUpTo(const std::vector<BucketKld>& buckets, double threshold) {
  SafeRange r;
  for (const BucketKld& b : buckets) {
    if (!(b.kld_mean <= threshold)) return r;
    r.up_to = b.last_len;
  }
  r.is_all_measured = r.up_to.has_value();
  return r;
}

ConfigSummary SummarizeConfig(const std::vector<WindowRecord>& windows, size_t config, const AggregateOptions& o) {
  const size_t nw = windows.size();
  FidelityCollector overall(nw);
  std::vector<FidelityCollector> buckets(o.buckets.size(), FidelityCollector(nw));
  constexpr int kClasses = kNumTokenClasses + 1;  // + rare
  double class_kld[kClasses] = {}, class_top1[kClasses] = {}, class_n[kClasses] = {};
  std::vector<int> last_len(o.buckets.size(), 0);  // [n_buckets] largest context length with data
  for (size_t slot = 0; slot < nw; ++slot) {
    const WindowRecord& w = windows[slot];
    KV_CHECK(config < w.configs.size());
    const WindowRecord::Config& c = w.configs[config];
    for (size_t i = 0; i < w.size(); ++i) {
      const int len = w.first_pos + static_cast<int>(i) + 1;  // context length of the prediction
      const double kld = c.kld[i];
      overall.Add(slot, kld, w.nll_base[i], c.nll[i], c.dp[i], c.top1[i], c.top5_drop[i]);
      const int b = BucketIndex(o.buckets, len);
      if (b >= 0) {
        buckets[static_cast<size_t>(b)].Add(slot, kld, w.nll_base[i], c.nll[i], c.dp[i], c.top1[i], c.top5_drop[i]);
        last_len[static_cast<size_t>(b)] = std::max(last_len[static_cast<size_t>(b)], len);
      }
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
  s.overall = overall.Summarize(o.bootstrap, false);
  for (const FidelityCollector& b : buckets) s.buckets.push_back(b.Summarize(o.bootstrap, true));
  for (int k = 0; k < kClasses; ++k) {
    if (k < kNumTokenClasses ? !o.classes : !o.rare) continue;
    ClassSummary cs;
    cs.name = k < kNumTokenClasses ? TokenClassName(static_cast<TokenClass>(k)) : "rare";
    cs.tokens = static_cast<int64_t>(class_n[k]);
    if (class_n[k] > 0) cs.kld_mean = class_kld[k] / class_n[k], cs.top1_agree = class_top1[k] / class_n[k];
    s.classes.push_back(cs);
  }
  std::vector<BucketKld> measured;
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    if (s.buckets[b].tokens > 0) measured.push_back({last_len[b], s.buckets[b].kld_mean});
  }
  s.bucket_last_len = std::move(last_len);
  s.safe = SafeUpTo(measured, o.kld_threshold);
  return s;
}

}  // namespace kvaudit
