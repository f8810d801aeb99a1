#include "decide/gate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "kv/config/cache_config.h"
#include "probe/binomial_interval.h"

namespace kvaudit {
namespace {

// The results of one configuration, wherever they came from.
struct ConfigInputs {
  std::string spec;
  const EvalConfigResult* eval = nullptr;
  const EvalInput* eval_file = nullptr;
  const ProbeConfigResult* probe = nullptr;
  const ProbeInput* probe_file = nullptr;
};

ConfigInputs& Slot(std::vector<ConfigInputs>& all, const std::string& spec) {
  for (ConfigInputs& c : all) {
    if (c.spec == spec) return c;
  }
  all.push_back({spec});
  return all.back();
}

// Adds every configuration of one job's files (eval or probe) to `all`; a configuration in two
// files of the same job is ambiguous.
template <class Input, class Config>
Status AddJob(const std::vector<Input>& files, const char* job, const Config* ConfigInputs::*result,
              const Input* ConfigInputs::*file, std::vector<ConfigInputs>* all) {
  for (const Input& f : files) {
    for (const Config& c : f.configs) {
      ConfigInputs& s = Slot(*all, c.spec);
      if (s.*result) {
        return BadInput(c.spec + " has " + job + " results in two files, " + (s.*file)->path + " and " + f.path +
                        "; hint: pass one --results per configuration and job");
      }
      s.*result = &c, s.*file = &f;
    }
  }
  return Status::Ok();
}

// Every configuration in the order the results list it; one eval and one probe result at most each.
Expected<std::vector<ConfigInputs>> Configurations(const GateInputs& in) {
  std::vector<ConfigInputs> all;
  KV_RETURN_IF_ERROR(AddJob(in.evals, "eval", &ConfigInputs::eval, &ConfigInputs::eval_file, &all));
  KV_RETURN_IF_ERROR(AddJob(in.probes, "probe", &ConfigInputs::probe, &ConfigInputs::probe_file, &all));
  if (all.empty()) return BadInput("the results hold no configuration; hint: run eval or probe with --kv SPEC");
  return all;
}

// Eval and probe compare against a baseline; results against different baselines do not add up.
Status CheckBaselines(const GateInputs& in) {
  std::string first, first_path;
  auto check = [&](const std::string& baseline, const std::string& path) -> Status {
    if (baseline.empty()) return Status::Ok();
    if (first.empty()) first = baseline, first_path = path;
    if (baseline == first) return Status::Ok();
    return BadInput("the results compare against different baselines (" + first + " in " + first_path + ", " +
                    baseline + " in " + path + "); hint: run eval and probe with the same --baseline");
  };
  for (const EvalInput& e : in.evals) KV_RETURN_IF_ERROR(check(e.baseline, e.path));
  for (const ProbeInput& p : in.probes) KV_RETURN_IF_ERROR(check(p.baseline, p.path));
  return Status::Ok();
}

Status CheckAlpha(const AcceptancePolicy& policy, const GateInputs& in) {
  if (!policy.alpha) return Status::Ok();
  for (const ProbeInput& p : in.probes) {
    if (std::fabs(p.alpha - *policy.alpha) <= 1e-12) continue;
    return BadInput("probes.alpha = " + GateNumber(*policy.alpha) + " in " + policy.name +
                    " but the probe run used alpha " + GateNumber(p.alpha) + ", " + p.path +
                    "; hint: probe's verdicts are at alpha " + GateNumber(p.alpha) + ": set alpha to that, or drop it");
  }
  return Status::Ok();
}

bool HasFidelityCriteria(const AcceptancePolicy& p) {
  return p.fidelity.any() || p.relative_to ||
         std::any_of(p.ranges.begin(), p.ranges.end(), [](const FidelityRange& r) { return r.limits.any(); });
}

// A case before it is judged: pass and text follow from measured and threshold.
GateCase Case(std::string criterion, std::string scope, int from, int to, std::string family, std::string measure,
              double measured, double threshold) {
  GateCase c;
  c.criterion = std::move(criterion), c.scope = std::move(scope), c.from = from, c.to = to;
  c.family = std::move(family), c.measure = std::move(measure), c.measured = measured, c.threshold = threshold;
  return c;
}

std::string Range(int from, int to) { return std::to_string(from) + "-" + std::to_string(to); }

CaseOutcome Against(Interval ci, double threshold, bool is_min) {
  if (is_min ? ci.lo >= threshold : ci.hi <= threshold) return CaseOutcome::kPass;
  if (is_min ? ci.hi < threshold : ci.lo > threshold) return CaseOutcome::kFail;
  return CaseOutcome::kInconclusive;
}

// c.outcome and c.pass from its interval (its measured value where it has none) and the policy.
void Settle(GateCase& c, bool is_min, const AcceptancePolicy& policy) {
  c.outcome = Against(c.interval.value_or(Interval{c.measured, c.measured}), c.threshold, is_min);
  c.pass = c.outcome == CaseOutcome::kPass || (c.outcome == CaseOutcome::kInconclusive && !policy.InconclusiveFails());
}

// c.detail, and c.text: "top1_agree 0.972656 [0.9447, 0.9867] straddles 0.975 (top1_agree_min),
// context 65-128: 256 tokens in 4 windows".
void Describe(GateCase& c, bool is_min, std::string detail) {
  const char* op = c.outcome == CaseOutcome::kPass   ? (is_min ? ">=" : "<=")
                   : c.outcome == CaseOutcome::kFail ? (is_min ? "<" : ">")
                                                     : "straddles";
  c.text = c.measure + " " + GateNumber(c.measured) + IntervalText(c) + " " + op + " " + GateNumber(c.threshold) +
           " (" + c.criterion + "), " + c.scope + ": " + detail;
  c.detail = std::move(detail);
}

// "; about N more windows would likely decide it" when `factor` times the windows would.
std::string WindowsFactorText(double factor, int windows) {
  const double needed = std::ceil(windows * factor);
  if (needed > 50.0 * windows)
    return "; the estimate is close to the threshold: over 50 times the windows would be needed";
  const auto more = static_cast<long long>(std::max(1.0, needed - windows));
  return "; about " + std::to_string(more) + " more windows would likely decide it";
}

// "; about 12 more windows would likely decide it": the interval's half-width toward the threshold
// shrinks as 1/sqrt(windows), so it clears the threshold at about windows·(half/distance)².
std::string MoreWindowsText(const GateCase& c, int windows) {
  if (c.outcome != CaseOutcome::kInconclusive || !c.interval) return "";
  const double distance = std::fabs(c.measured - c.threshold);
  if (distance == 0 || windows <= 0) return "; the estimate is on the threshold: more windows narrow the interval";
  const double half = c.threshold > c.measured ? c.interval->hi - c.measured : c.measured - c.interval->lo;
  return WindowsFactorText((half / distance) * (half / distance), windows);
}

// The same for a case against a reference measured on the same windows, whose interval narrows
// too: with d the candidate's distance from the reference toward worse, both half-widths shrink as
// 1/sqrt(windows), so a worse candidate fails once d exceeds its better-side half-width plus the
// reference's worse-side one, and a better one passes once -d exceeds the difference of their
// worse-side half-widths.
std::string RelativeMoreWindowsText(const GateCase& c, const Interval& ref, double ref_value, bool is_min,
                                    int windows) {
  if (c.outcome != CaseOutcome::kInconclusive || !c.interval || windows <= 0) return "";
  const double d = is_min ? ref_value - c.measured : c.measured - ref_value;
  const double worse = is_min ? c.measured - c.interval->lo : c.interval->hi - c.measured;
  const double better = is_min ? c.interval->hi - c.measured : c.measured - c.interval->lo;
  const double ref_worse = is_min ? ref_value - ref.lo : ref.hi - ref_value;
  if (d == 0) return "; on par with the reference: more windows narrow both intervals alike";
  const double gap = d > 0 ? better + ref_worse : worse - ref_worse;
  return WindowsFactorText((gap / d) * (gap / d), windows);
}

// "; about 60 more instances would likely decide it": the smallest count whose exact interval at
// the same rate clears the threshold (found by doubling, then bisection; the CP interval shrinks
// with n at a fixed rate).
std::string MoreInstancesText(const GateCase& c, int64_t k, int64_t n) {
  if (c.outcome != CaseOutcome::kInconclusive) return "";
  const double rate = static_cast<double>(k) / static_cast<double>(n);
  auto decided = [&](int64_t m) {
    const auto km = static_cast<int64_t>(std::llround(rate * static_cast<double>(m)));
    return Against(ClopperPearson95(km, m), c.threshold, false) != CaseOutcome::kInconclusive;
  };
  constexpr int64_t kMost = 1 << 16;  // beyond it, "more instances" is no practical answer (and slow to find)
  int64_t hi = 2 * n;
  while (hi < kMost && !decided(hi)) hi *= 2;
  if (rate == c.threshold || !decided(hi)) return "; the rate is on the threshold: more instances narrow the interval";
  int64_t lo = n;  // undecided
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (decided(mid) ? hi : lo) = mid;
  }
  return "; about " + std::to_string(hi - n) + " more instances would likely decide it";
}

// A probe rate (k of n) against its maximum: a maximum of 0 is a rule on the sample (any
// occurrence fails, none passes: no interval can clear 0), any other maximum is judged by the
// rate's exact interval.
void JudgeRate(GateCase& c, int64_t k, int64_t n, const AcceptancePolicy& policy, const std::string& counts) {
  if (c.threshold > 0 && n > 0) c.interval = ClopperPearson95(k, n);
  Settle(c, false, policy);
  Describe(c, false, counts + MoreInstancesText(c, k, n));
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
    return BadInput("relative_to = \"" + *policy.relative_to + "\" (" + policy.relative_to_where + "): " + ref.spec +
                    " has no eval results; hint: run kvaudit eval --kv " + ref.spec + " with the others");
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
    const std::string windows = b.windows > 0 ? " in " + std::to_string(b.windows) + " windows" : "";
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
      const std::string windows = b.windows > 0 ? " in " + std::to_string(b.windows) + " windows" : "";
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

std::string MissingFamilyHint(ProbeFamily f, const std::string& spec) {
  const std::string family = FamilyName(f);
  return "run kvaudit probe --kv " + spec + " --family " + family +
         (f == ProbeFamily::kCustom ? " --custom FILE" : "") + " --out DIR and pass --results DIR, or make " + family +
         " not required";
}

// The family's criteria as skipped cases: the baseline passes too few of its instances for a
// cache to lose any (a family the model cannot do is no evidence for or against the cache).
void NoSignalCases(const AcceptancePolicy& policy, ProbeFamily f, const PooledFamilyRow& row, ConfigVerdict* v) {
  const std::string family = FamilyName(f);
  const double rate = static_cast<double>(row.baseline_pass) / row.n, floor = policy.BaselinePassMin(f);
  std::vector<std::string> criteria;
  if (policy.family(f) && policy.family(f)->cache_induced_rate_max) criteria.push_back(".cache_induced_rate_max");
  if (policy.FailsOnSignificant(f)) criteria.push_back(".fail_on_significant");
  if (policy.relative_to) criteria.push_back(".relative_to");
  for (const std::string& criterion : criteria) {
    GateCase c = Case(family + criterion, "family " + family, 0, 0, family, "baseline pass rate", rate, floor);
    c.pass = true, c.outcome = CaseOutcome::kNoSignal;
    c.text = "no signal: the baseline passes " + std::to_string(row.baseline_pass) + " of " + std::to_string(row.n) +
             " " + family + " instances (" + GateNumber(rate) + " < baseline_pass_min " + GateNumber(floor) +
             "), so the cache cannot be judged on them";
    c.detail = c.text;
    v->cases.push_back(std::move(c));
  }
  v->no_signal.push_back(family + ": the baseline passes " + std::to_string(row.baseline_pass) + " of " +
                         std::to_string(row.n));
}

// "; cannot be significant: ..." when no outcome of these instances could reach alpha: the most
// a loss can show is every instance the baseline passes lost and none recovered, exact McNemar
// p = 2·0.5^k (before Holm), e.g. 0.0625 for 5 probes.
std::string UnreachableSignificance(const PooledFamilyRow& row, double alpha) {
  const double best = std::min(1.0, 2 * std::pow(0.5, row.baseline_pass));
  if (best < alpha) return "";
  return "; cannot be significant: with " + std::to_string(row.baseline_pass) +
         " instances the baseline passes, the smallest possible p is " + GateNumber(best) + " >= alpha " +
         GateNumber(alpha);
}

// The family's cache-induced rate against the upper end of the reference's exact interval (its
// rows come from the same probe instances, so the counts are of the same n).
void RelativeRateCase(const AcceptancePolicy& policy, const std::string& family, const PooledFamilyRow& row,
                      const PooledFamilyRow& ref_row, const std::string& ref_spec, bool is_ref, ConfigVerdict* v) {
  const Interval ref = ClopperPearson95(ref_row.cache_induced, ref_row.n);
  GateCase c = Case(family + ".relative_to", "family " + family, 0, 0, family, "cache-induced rate",
                    static_cast<double>(row.cache_induced) / row.n, ref.hi);
  c.interval = ClopperPearson95(row.cache_induced, row.n);
  Settle(c, false, policy);
  const std::string against = is_ref ? "; the reference itself"
                                     : "; " + ref_spec + ": " + std::to_string(ref_row.cache_induced) + " of " +
                                           std::to_string(ref_row.n) + " [" + GateNumber(ref.lo) + ", " +
                                           GateNumber(ref.hi) + "], the upper end";
  const char* more = c.outcome == CaseOutcome::kInconclusive ? "; more instances would narrow both intervals" : "";
  Describe(c, false,
           std::to_string(row.cache_induced) + " cache-induced failures in " + std::to_string(row.n) +
               " pooled instances" + against + more);
  v->cases.push_back(std::move(c));
}

// ref_row: the reference's row of the family under relative_to, else null.
void CheckedFamilyCases(const AcceptancePolicy& policy, ProbeFamily f, const PooledFamilyRow& row, double alpha,
                        const PooledFamilyRow* ref_row, const std::string& ref_spec, bool is_ref, ConfigVerdict* v) {
  if (static_cast<double>(row.baseline_pass) < policy.BaselinePassMin(f) * row.n)
    return NoSignalCases(policy, f, row, v);
  const std::string family = FamilyName(f);
  const std::string counts = std::to_string(row.cache_induced) + " cache-induced failures, " +
                             std::to_string(row.recovered) + " recoveries in " + std::to_string(row.n) +
                             " pooled instances";
  if (const auto& max = policy.family(f) ? policy.family(f)->cache_induced_rate_max : std::nullopt) {
    GateCase c = Case(family + ".cache_induced_rate_max", "family " + family, 0, 0, family, "cache-induced rate",
                      static_cast<double>(row.cache_induced) / row.n, *max);
    JudgeRate(c, row.cache_induced, row.n, policy, counts);
    v->cases.push_back(std::move(c));
  }
  if (policy.FailsOnSignificant(f)) {
    // Only a significant loss fails: more recoveries than failures is a difference toward the cache.
    GateCase c = Case(family + ".fail_on_significant", "family " + family, 0, 0, family, "Holm-adjusted McNemar p",
                      row.p_holm, alpha);
    c.pass = !(row.significant && row.cache_induced > row.recovered);
    c.outcome = c.pass ? CaseOutcome::kPass : CaseOutcome::kFail;
    const char* verdict = !row.significant ? "not significant"
                          : c.pass         ? "significant, toward the configuration"
                                           : "significant cache-induced loss";
    c.detail = verdict + ("; " + counts) + UnreachableSignificance(row, alpha);
    c.text = c.measure + " " + GateNumber(c.measured) + (row.significant ? " < " : " >= ") + GateNumber(alpha) + " (" +
             c.criterion + "), " + c.scope + ": " + c.detail;
    v->cases.push_back(std::move(c));
  }
  if (ref_row) RelativeRateCase(policy, family, row, *ref_row, ref_spec, is_ref, v);
}

void VarianceCase(const AcceptancePolicy& policy, const ProbeConfigResult& p, ConfigVerdict* v) {
  const int differ = p.variance_pairs - p.variance_identical;
  GateCase c = Case("variance.same_seed_divergence_max", "family variance", 0, 0, "variance", "same-seed divergence",
                    p.variance_pairs > 0 ? static_cast<double>(differ) / p.variance_pairs : 0.0,
                    *policy.family(ProbeFamily::kVariance)->same_seed_divergence_max);
  JudgeRate(c, differ, p.variance_pairs, policy,
            std::to_string(differ) + " of " + std::to_string(p.variance_pairs) +
                " same-seed sample pairs differ from the baseline's");
  v->cases.push_back(std::move(c));
}

void DriftCase(const AcceptancePolicy& policy, const ProbeConfigResult& p, ConfigVerdict* v) {
  const auto worst = std::max_element(p.drift_kl_mean.begin(), p.drift_kl_mean.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  GateCase c = Case("drift.kl_mean_max", "family drift", 0, 0, "drift", "drift kl_mean", worst->second,
                    *policy.family(ProbeFamily::kDrift)->kl_mean_max);
  // One mean KL per length along the base path, without a per-sample spread in probe's results:
  // judged as measured (docs/decision.md "Three outcomes").
  Settle(c, false, policy);
  Describe(
      c, false,
      "the worst of " + std::to_string(p.drift_kl_mean.size()) + " lengths, at length " + std::to_string(worst->first));
  v->cases.push_back(std::move(c));
}

// The team's own probes, one by one, whatever else the policy says about the custom family: a
// probe the baseline passes and the configuration fails is named (lost_custom_probes) and is a
// FAIL case under probes.custom.per_probe = "fail", a WARN case otherwise; none lost is one PASS
// case, so CI lists the rule as checked.
void CustomProbeCases(const AcceptancePolicy& policy, const ProbeConfigResult& p, ConfigVerdict* v) {
  int judged = 0;
  for (const CustomProbeOutcome& o : p.custom) {
    if (!o.baseline_pass) continue;
    ++judged;
    if (o.pass) continue;
    const std::string name = o.id + " (" + std::to_string(o.tokens) + " tokens)";
    GateCase c = Case("custom.per_probe", "probe " + o.id, 0, 0, "custom", "lost under the configuration", 1, 0);
    c.outcome = policy.LostCustomProbeFails() ? CaseOutcome::kFail : CaseOutcome::kWarn;
    c.pass = c.outcome == CaseOutcome::kWarn;
    c.detail = "passes at baseline and fails under the configuration";
    c.text = "custom probe " + name + " " + c.detail + " (custom.per_probe)";
    v->cases.push_back(std::move(c));
    v->lost_custom_probes.push_back(name);
  }
  if (judged == 0 || !v->lost_custom_probes.empty()) return;
  GateCase c = Case("custom.per_probe", "family custom", 0, 0, "custom", "custom probes lost", 0, 0);
  c.outcome = CaseOutcome::kPass, c.pass = true;
  c.detail =
      "every custom probe the baseline passes passes: " + std::to_string(judged) + " of " + std::to_string(judged);
  c.text = "custom probes lost 0 (custom.per_probe), family custom: " + c.detail;
  v->cases.push_back(std::move(c));
}

// The reference's pooled row of family f under relative_to (null without a reference); the
// reference must have probed the family on the same instances.
Expected<const PooledFamilyRow*> ReferenceRow(const AcceptancePolicy& policy, ProbeFamily f, const PooledFamilyRow& row,
                                              const ConfigInputs& in, const ConfigInputs* ref) {
  if (!ref) return static_cast<const PooledFamilyRow*>(nullptr);
  const PooledFamilyRow* found = nullptr;
  if (ref->probe) {
    for (const PooledFamilyRow& r : ref->probe->pooled) found = r.family == FamilyName(f) ? &r : found;
  }
  const std::string where = "relative_to = \"" + *policy.relative_to + "\" (" + policy.relative_to_where + ")";
  if (!found) {
    return BadInput(where + ": the reference " + ref->spec + " has no " + FamilyName(f) + " results but " + in.spec +
                    " has; hint: " + MissingFamilyHint(f, ref->spec));
  }
  if (found->n != row.n) {
    return BadInput(where + ": the reference " + ref->spec + " has " + std::to_string(found->n) + " " + FamilyName(f) +
                    " instances, " + in.spec + " " + std::to_string(row.n) +
                    "; hint: probe them in one kvaudit probe run (the same instances)");
  }
  return found;
}

// The families the policy judges, in canonical order; a required one that is missing is bad input.
Status ProbeCases(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref, ConfigVerdict* v) {
  std::vector<std::pair<std::string, std::string>> skipped;  // (why, families), in family order
  for (size_t i = 0; i < kNumProbeFamilies; ++i) {
    const auto f = static_cast<ProbeFamily>(i);
    if (policy.CriteriaOf(f) == 0) continue;
    const PooledFamilyRow* row = nullptr;
    if (in.probe && IsCheckedFamily(f)) {
      for (const PooledFamilyRow& r : in.probe->pooled) row = r.family == FamilyName(f) ? &r : row;
    }
    const bool present = in.probe && (IsCheckedFamily(f)            ? row != nullptr
                                      : f == ProbeFamily::kVariance ? in.probe->variance_rows > 0
                                                                    : !in.probe->drift_kl_mean.empty());
    if (!present) {
      const std::string where = in.probe ? "not in " + in.probe_file->path : "no probe results";
      if (policy.Required(f)) {
        return BadInput(std::string("the policy requires the probe family ") + FamilyName(f) + " but " + in.spec +
                        " has " + (in.probe ? "none in " + in.probe_file->path : "no probe results") +
                        "; hint: " + MissingFamilyHint(f, in.spec));
      }
      auto same = std::find_if(skipped.begin(), skipped.end(), [&](const auto& s) { return s.first == where; });
      if (same == skipped.end()) same = skipped.insert(skipped.end(), {where, ""});
      same->second += (same->second.empty() ? "" : ", ") + std::string(FamilyName(f));
      continue;
    }
    if (IsCheckedFamily(f)) {
      KV_ASSIGN_OR_RETURN(const PooledFamilyRow* ref_row, ReferenceRow(policy, f, *row, in, ref));
      CheckedFamilyCases(policy, f, *row, in.probe_file->alpha, ref_row, ref ? ref->spec : "", ref == &in, v);
    } else if (f == ProbeFamily::kVariance) {
      VarianceCase(policy, *in.probe, v);
    } else {
      DriftCase(policy, *in.probe, v);
    }
  }
  for (const auto& [why, families] : skipped) v->not_judged.push_back(families + ": " + why + " (not required)");
  if (in.probe) CustomProbeCases(policy, *in.probe, v);
  return Status::Ok();
}

Expected<ConfigVerdict> Judge(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref) {
  ConfigVerdict v;
  v.config = in.spec;
  if (HasFidelityCriteria(policy)) {
    if (!in.eval && in.probe->endpoint) {  // a server's name, not a --kv spec
      return BadInput(in.spec + " was probed through an endpoint and has no eval results (only " + in.probe_file->path +
                      ") but the policy has fidelity criteria; hint: judge its probes with a policy without "
                      "[fidelity] (docs/decision.md), or measure fidelity with kvaudit eval --endpoint against a "
                      "server that returns prompt logprobs (docs/endpoints.md)");
    }
    if (!in.eval) {
      return BadInput(in.spec + " has no eval results (only " + in.probe_file->path +
                      ") but the policy has fidelity "
                      "criteria; hint: run kvaudit eval --kv " +
                      in.spec + " --out DIR and pass --results DIR");
    }
    KV_RETURN_IF_ERROR(FidelityCases(policy, in, ref, &v));
  }
  KV_RETURN_IF_ERROR(ProbeCases(policy, in, ref, &v));
  for (const CaseOutcome o : {CaseOutcome::kFail, CaseOutcome::kInconclusive}) {
    for (size_t i = 0; i < v.cases.size() && !v.first_failure; ++i) {
      if (v.cases[i].outcome == o) v.first_failure = i;
    }
    if (v.first_failure) break;
  }
  v.outcome = v.first_failure ? v.cases[*v.first_failure].outcome : CaseOutcome::kPass;
  v.pass = std::all_of(v.cases.begin(), v.cases.end(), [](const GateCase& c) { return c.pass; });
  return v;
}

// relative_to's configuration among the results: the one with its spec, else, where the policy's
// spec writes no engine=, the one configuration storing the same cache under another engine (a
// target measures "k=q8_0,v=q8_0" as "k=q8_0,v=q8_0,engine=llama.cpp"). None: null.
Expected<const ConfigInputs*> FindReference(const AcceptancePolicy& policy, const std::vector<ConfigInputs>& all) {
  if (!policy.relative_to) return static_cast<const ConfigInputs*>(nullptr);
  const std::string& spec = *policy.relative_to;
  for (const ConfigInputs& c : all) {
    if (c.spec == spec) return &c;
  }
  const Expected<CacheConfig> wanted = CacheConfig::Parse(spec, "relative_to");
  KV_CHECK_MSG(wanted.ok(), "the policy parsed it");
  std::vector<const ConfigInputs*> same;
  for (const ConfigInputs& c : all) {
    const Expected<CacheConfig> config = CacheConfig::Parse(c.spec, "results");  // endpoints' names are no spec
    if (!wanted->attention_written() && config.ok() && config->SameCacheAs(*wanted)) same.push_back(&c);
  }
  const std::string where = "relative_to = \"" + spec + "\" (" + policy.relative_to_where + ")";
  if (same.size() > 1) {
    return BadInput(where + " matches " + same[0]->spec + " and " + same[1]->spec +
                    " in the results; hint: write the reference with its engine=, e.g. relative_to = \"" +
                    same[0]->spec + "\"");
  }
  if (same.empty()) {
    return BadInput(where + " is not among the results' configurations; hint: measure it with the others (kvaudit " +
                    "eval and probe --kv " + spec + "; audit and recommend add it themselves)");
  }
  return same.front();
}

}  // namespace

std::string GateReport::TargetText() const {
  return target_context ? std::to_string(*target_context) + " tokens" : "the longest context measured";
}

const char* OutcomeWord(CaseOutcome o) {
  switch (o) {
    case CaseOutcome::kPass: return "PASS";
    case CaseOutcome::kFail: return "FAIL";
    case CaseOutcome::kInconclusive: return "INCONCLUSIVE";
    case CaseOutcome::kNoSignal: return "NO SIGNAL";
    case CaseOutcome::kWarn: return "WARN";
  }
  return "FAIL";
}

int GateReport::inconclusive() const {
  return static_cast<int>(std::count_if(
      configs.begin(), configs.end(), [](const ConfigVerdict& v) { return v.outcome == CaseOutcome::kInconclusive; }));
}

std::string GateReport::InconclusiveNote() const {
  const int n = inconclusive();
  if (n == 0) return "";
  return std::to_string(n) + (n == 1 ? " configuration is" : " configurations are") +
         " INCONCLUSIVE: an interval straddles its threshold, so the sample cannot tell pass from fail (each such "
         "case says about how many more windows or instances would decide it); policy " +
         policy +
         (inconclusive_fails
              ? " counts that as a failure (inconclusive = \"fail\")"
              : std::string(n == 1 ? " passes it" : " passes them") + " with this warning (inconclusive = \"warn\")");
}

std::string GateReport::LostCustomProbesNote() const {
  return "custom probes lost under a configuration (they pass at baseline); policy " + policy +
         (lost_custom_probe_fails ? " fails the configuration for each (probes.custom.per_probe = \"fail\")"
                                  : " warns (probes.custom.per_probe = \"warn\")");
}

int GateReport::failed() const {
  return static_cast<int>(
      std::count_if(configs.begin(), configs.end(), [](const ConfigVerdict& v) { return !v.pass; }));
}

Expected<GateReport> EvaluateGate(const AcceptancePolicy& policy, const GateInputs& inputs) {
  KV_RETURN_IF_ERROR(CheckBaselines(inputs));
  KV_RETURN_IF_ERROR(CheckAlpha(policy, inputs));
  KV_ASSIGN_OR_RETURN(const std::vector<ConfigInputs> configs, Configurations(inputs));
  GateReport report;
  report.policy = policy.name;
  report.target_context = policy.target_context;
  report.inconclusive_fails = policy.InconclusiveFails();
  report.lost_custom_probe_fails = policy.LostCustomProbeFails();
  for (const EvalInput& e : inputs.evals) report.inputs.push_back(e.path + " (eval)");
  for (const ProbeInput& p : inputs.probes) report.inputs.push_back(p.path + " (probe)");
  KV_ASSIGN_OR_RETURN(const ConfigInputs* ref, FindReference(policy, configs));
  if (ref) report.reference = ref->spec;
  for (const ConfigInputs& c : configs) {
    KV_ASSIGN_OR_RETURN(ConfigVerdict v, Judge(policy, c, ref));
    report.configs.push_back(std::move(v));
  }
  return report;
}

std::string SafeUpToText(const ConfigVerdict& v) {
  if (!v.judged_fidelity) return "not judged";
  if (!v.safe_up_to) return "none";
  if (v.safe_up_to_is_all_measured) return "all measured (>= " + std::to_string(*v.safe_up_to) + ")";
  return std::to_string(*v.safe_up_to);
}

std::string IntervalText(const GateCase& c) {
  return c.interval ? " [" + GateNumber(c.interval->lo) + ", " + GateNumber(c.interval->hi) + "]" : "";
}

std::string GateNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

}  // namespace kvaudit
