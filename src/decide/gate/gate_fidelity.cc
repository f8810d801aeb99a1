#include "decide/gate/gate_fidelity.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace kvaudit::gate_cases {
namespace {

// " in 3 windows", " in 1 window", or "" for a file without the count.
std::string WindowsText(int windows) {
  if (windows <= 0) return "";
  return " in " + std::to_string(windows) + (windows == 1 ? " window" : " windows");
}

// One metric over a pool of buckets (PoolSmallBuckets says how); none when a part lacks it.
std::optional<double> PooledValue(FidelityMetric m, const std::vector<const EvalBucketRow*>& pool, int64_t tokens) {
  double acc = 0;
  for (const EvalBucketRow* b : pool) {
    const std::optional<double>& x = b->value[static_cast<size_t>(m)];
    if (!x) return std::nullopt;  // a part without the metric: the pool has none
    const double w = static_cast<double>(b->tokens) / static_cast<double>(tokens);
    if (m == FidelityMetric::kKldP99) {
      acc = std::max(acc, *x);
    } else if (m == FidelityMetric::kPplRatio) {
      acc += w * std::log(*x);
    } else {
      acc += w * *x;
    }
  }
  return m == FidelityMetric::kPplRatio ? std::exp(acc) : acc;
}

// The smallest bucket that can pass top1_agree_min = t at all: when every token agrees, Wilson's
// lower bound is n / (n + z²), which clears t from n = z²·t / (1 − t) on (150 tokens for 0.975).
// A threshold of 1 is a rule on the sample (judged as measured), so it asks for nothing.
int64_t TokensToPassTop1(const AcceptancePolicy& policy) {
  double strictest = 0;
  auto see = [&](const FidelityLimits& l) {
    if (const auto& t = l[FidelityMetric::kTop1Agree]; t && *t < 1) strictest = std::max(strictest, *t);
  };
  see(policy.fidelity);
  for (const FidelityRange& r : policy.ranges) see(r.limits);
  constexpr double kZ2 = kZ975 * kZ975;
  return static_cast<int64_t>(std::ceil(kZ2 * strictest / (1 - strictest)));
}

// The intervals of a pool from its parts' sums by window (the same method as eval's); the p99's
// needs every position, which results.json does not hold: a pool's p99 lies between its parts'
// smallest and largest p99, so the hull of their intervals holds it.
Status PoolIntervals(const std::vector<const EvalBucketRow*>& pool, const ConfigInputs& in, EvalBucketRow* r) {
  std::optional<WindowTotals> sum;
  Interval p99{0, 0};
  bool has_p99 = true;
  for (size_t i = 0; i < pool.size(); ++i) {
    const EvalBucketRow& b = *pool[i];
    if (!b.totals || (sum && !sum->Merge(*b.totals))) {
      return BadInput("context " + Range(b.from, b.to) + " of " + in.spec + " has no window_sums, " +
                      in.eval_file->path + " (the gate pools small buckets with them); hint: rerun kvaudit eval " +
                      "with this kvaudit");
    }
    if (!sum) sum = *b.totals;
    const std::optional<Interval>& q = b.ci[static_cast<size_t>(FidelityMetric::kKldP99)];
    has_p99 = has_p99 && q.has_value();
    if (q) p99 = i == 0 ? *q : Interval{std::min(p99.lo, q->lo), std::max(p99.hi, q->hi)};
  }
  const FidelityIntervals ci =
      IntervalsOf(*sum, in.eval_file->bootstrap_replicates, in.eval_file->bootstrap_seed, nullptr);
  r->ci[static_cast<size_t>(FidelityMetric::kKldMean)] = ci.kld_mean;
  r->ci[static_cast<size_t>(FidelityMetric::kTop1Agree)] = ci.top1_agree;
  r->ci[static_cast<size_t>(FidelityMetric::kPplRatio)] = ci.ppl_ratio;
  r->ci[static_cast<size_t>(FidelityMetric::kKldP99)] = has_p99 ? std::optional<Interval>(p99) : std::nullopt;
  r->windows = sum->windows();
  r->totals = std::move(sum);
  return Status::Ok();
}

// Buckets with fewer scored tokens than the policy's minimum are judged together with the buckets
// after them until the pool holds enough (a short last pool joins the one before), so a small eval
// is judged on coarser ranges instead of on a few tokens. The minimum is fidelity.min_bucket_tokens
// or the smallest bucket that can pass top1_agree_min at all, whichever is larger. Pooled exactly
// where the schema allows: mean KLD and top-1 weighted by tokens, the PPL ratio as exp of the
// weighted mean log ratio (ppl_ratio = exp(mean ΔNLL)), their intervals from the sums by window;
// the p99 of a pool is at most the largest p99 of its parts (each part has ≥ 99% of its tokens at
// or below its own), so that bound is judged. Fewer tokens than the minimum in all is bad input.
Expected<std::vector<EvalBucketRow>> PoolSmallBuckets(const AcceptancePolicy& policy, const ConfigInputs& in) {
  const std::vector<EvalBucketRow>& buckets = in.eval->buckets;
  const int64_t top1_min = TokensToPassTop1(policy);
  const int64_t min = std::max<int64_t>(policy.min_bucket_tokens.value_or(0), top1_min);
  if (min == 0) return buckets;
  std::vector<std::vector<const EvalBucketRow*>> pools(1);
  int64_t total = 0, pooled = 0;
  for (const EvalBucketRow& b : buckets) {
    if (pooled >= min) pools.emplace_back(), pooled = 0;
    pools.back().push_back(&b);
    pooled += b.tokens, total += b.tokens;
  }
  if (total < min) {
    const std::string why = min == top1_min && min > policy.min_bucket_tokens.value_or(0)
                                ? "the " + std::to_string(min) + " a bucket needs to pass top1_agree_min"
                                : "fidelity.min_bucket_tokens = " + std::to_string(min);
    return BadInput("context " + Range(buckets.front().from, buckets.back().to) + " of " + in.spec + " has " +
                    std::to_string(total) + " scored tokens in all, fewer than " + why + " of " + policy.name + ", " +
                    in.eval_file->path + "; hint: run kvaudit eval with more --windows");
  }
  if (pooled < min && pools.size() > 1) {  // the short tail joins the pool before it
    std::vector<const EvalBucketRow*> tail = std::move(pools.back());
    pools.pop_back();
    pools.back().insert(pools.back().end(), tail.begin(), tail.end());
  }
  std::vector<EvalBucketRow> out;
  for (const auto& pool : pools) {
    EvalBucketRow r = *pool.front();
    r.to = pool.back()->to, r.measured_to = pool.back()->measured_to, r.tokens = 0;
    for (const EvalBucketRow* b : pool) r.tokens += b->tokens;
    if (pool.size() == 1) {  // unchanged, to the bit
      out.push_back(r);
      continue;
    }
    for (size_t m = 0; m < kNumFidelityMetrics; ++m)
      r.value[m] = PooledValue(static_cast<FidelityMetric>(m), pool, r.tokens);
    KV_RETURN_IF_ERROR(PoolIntervals(pool, in, &r));
    out.push_back(r);
  }
  return out;
}

// The reference's buckets (pooled as the configuration's are), one per bucket of `buckets`: the
// same context ranges with the same scored tokens, or the two were not measured on the same text.
Expected<std::vector<EvalBucketRow>> ReferenceBuckets(const AcceptancePolicy& policy, const ConfigInputs& in,
                                                      const std::vector<EvalBucketRow>& buckets,
                                                      const ConfigInputs& ref) {
  if (!ref.eval) {
    return BadInput("relative_to = \"" + policy.relative_to->spec() + "\" (" + policy.relative_to_where + "): " +
                    ref.spec + " has no eval results; hint: run kvaudit eval --kv " + ref.spec + " with the others");
  }
  KV_ASSIGN_OR_RETURN(std::vector<EvalBucketRow> pooled, PoolSmallBuckets(policy, ref));
  const bool same = pooled.size() == buckets.size() &&
                    std::equal(pooled.begin(), pooled.end(), buckets.begin(), [](const auto& a, const auto& b) {
                      return a.from == b.from && a.to == b.to && a.tokens == b.tokens;
                    });
  if (!same) {
    return BadInput(in.spec + " (" + in.eval_file->path + ") and its reference " + ref.spec + " (" +
                    ref.eval_file->path + ") were not scored on the same buckets and tokens; hint: measure them " +
                    "in one kvaudit eval run (the same --ctx, --windows and text)");
  }
  return pooled;
}

// One case per fidelity statistic of bucket b: its interval against the far end of the
// reference's interval in the same bucket (the upper end of a maximum, the lower end of top-1),
// so the configuration is no worse than the reference within the reference's own uncertainty.
// A statistic or interval missing from either file is bad input in a judged bucket (`judged`) and
// leaves *complete false beyond it.
Status RelativeFidelityCases(const AcceptancePolicy& policy, const ConfigInputs& in, const EvalBucketRow& b,
                             const ConfigInputs& ref, const EvalBucketRow& r, bool judged, bool* complete,
                             std::vector<GateCase>* out) {
  for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
    const FidelityMetricInfo& info = Info(static_cast<FidelityMetric>(m));
    bool missing = false;
    for (const auto& [row, config] : {std::pair(&b, &in), std::pair(&r, &ref)}) {
      if (row->value[m] && row->ci[m]) continue;
      missing = true, *complete = false;
      if (!judged) continue;
      return BadInput(config->spec + " has no " + (row->value[m] ? info.ci_field : info.field) + " for context " +
                      Range(b.from, b.to) + ", " + config->eval_file->path + " (relative_to compares " + info.field +
                      " with the reference's); hint: rerun kvaudit eval with this kvaudit");
    }
    if (missing) continue;
    const double bound = info.is_min ? r.ci[m]->lo : r.ci[m]->hi;
    GateCase c = Case(std::string(info.field) + ".relative_to", "context " + Range(b.from, b.to), b.from, b.to, "",
                      info.field, *b.value[m], bound);
    c.interval = b.ci[m];
    Settle(c, info.is_min, policy);
    const std::string windows = WindowsText(b.windows);
    const std::string against = in.spec == ref.spec ? "; the reference itself"
                                                    : "; " + ref.spec + ": " + GateNumber(*r.value[m]) + " [" +
                                                          GateNumber(r.ci[m]->lo) + ", " + GateNumber(r.ci[m]->hi) +
                                                          "], the " + (info.is_min ? "lower" : "upper") + " end";
    Describe(c, info.is_min,
             std::to_string(b.tokens) + " tokens" + windows + against +
                 RelativeMoreWindowsText(c, *r.ci[m], *r.value[m], info.is_min, b.windows));
    out->push_back(std::move(c));
  }
  return Status::Ok();
}

}  // namespace

// One case per (bucket with from <= target, criterion) and the safe prefix over every bucket;
// with relative_to, the cases against the reference (`ref`) in each bucket as well.
Status FidelityCases(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref,
                     ConfigVerdict* v) {
  const std::string& path = in.eval_file->path;
  if (in.eval->buckets.empty())
    return BadInput(in.spec + " has no measured bucket, " + path + "; hint: rerun kvaudit eval");
  KV_ASSIGN_OR_RETURN(const std::vector<EvalBucketRow> buckets, PoolSmallBuckets(policy, in));
  std::vector<EvalBucketRow> ref_buckets;
  if (ref) {
    KV_ASSIGN_OR_RETURN(ref_buckets, ReferenceBuckets(policy, in, buckets, *ref));
  }
  if (policy.target_context && *policy.target_context > buckets.back().to) {
    return BadInput("target_context " + std::to_string(*policy.target_context) +
                    " is beyond the longest context eval measured for " + in.spec + " (" +
                    std::to_string(buckets.back().to) + "), " + path + "; hint: rerun kvaudit eval with --ctx " +
                    std::to_string(*policy.target_context) + " (at most the model's context), or lower target_context");
  }
  const int target = policy.target_context.value_or(buckets.back().to);
  v->judged_fidelity = true;
  bool prefix = true;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const EvalBucketRow& b = buckets[i];
    const FidelityLimits limits = policy.LimitsFor(b.from, b.to);
    bool bucket_pass = true;
    for (size_t m = 0; m < kNumFidelityMetrics; ++m) {
      if (!limits.limit[m]) continue;
      const FidelityMetricInfo& info = Info(static_cast<FidelityMetric>(m));
      if (!b.value[m]) {
        if (b.from > target) {
          bucket_pass = false;
          continue;
        }
        return BadInput(in.spec + " has no " + info.field + " for context " + Range(b.from, b.to) + ", " + path +
                        " (the policy's " + info.key + " needs it); hint: rerun kvaudit eval with this kvaudit");
      }
      if (!b.ci[m]) {
        if (b.from > target) {
          bucket_pass = false;
          continue;
        }
        return BadInput(in.spec + " has no " + info.ci_field + " for context " + Range(b.from, b.to) + ", " + path +
                        " (the policy's " + info.key + " is judged by the interval of " + info.field +
                        "); hint: rerun kvaudit eval with this kvaudit");
      }
      GateCase c =
          Case(info.key, "context " + Range(b.from, b.to), b.from, b.to, "", info.field, *b.value[m], *limits.limit[m]);
      // top1_agree_min = 1 is a rule on the sample (every token agrees): no interval of a
      // proportion reaches 1, so it is judged as measured, like a probe rate's maximum of 0.
      if (!(info.is_min && c.threshold >= 1)) c.interval = b.ci[m];
      Settle(c, info.is_min, policy);
      // Through an endpoint the KLD is a lower bound from top-k logprobs (docs/metrics.md): a pass
      // on it is "not refuted", and the case says so.
      const bool bound = in.eval->kld_lower_bound && std::string_view(info.field).starts_with("kld");
      const std::string windows = WindowsText(b.windows);
      Describe(c, info.is_min,
               std::to_string(b.tokens) + " tokens" + windows +
                   (bound ? ", a lower bound from the endpoint's top-k logprobs" : "") + MoreWindowsText(c, b.windows));
      bucket_pass = bucket_pass && c.pass;
      if (b.from <= target) v->cases.push_back(std::move(c));
    }
    if (ref) {
      std::vector<GateCase> relative;
      bool complete = true;
      KV_RETURN_IF_ERROR(
          RelativeFidelityCases(policy, in, b, *ref, ref_buckets[i], b.from <= target, &complete, &relative));
      bucket_pass = bucket_pass && complete;
      for (GateCase& c : relative) {
        bucket_pass = bucket_pass && c.pass;
        if (b.from <= target) v->cases.push_back(std::move(c));
      }
    }
    prefix = prefix && bucket_pass;
    if (prefix) v->safe_up_to = b.measured_to;
  }
  v->safe_up_to_is_all_measured = prefix;
  return Status::Ok();
}

}  // namespace kvaudit::gate_cases
