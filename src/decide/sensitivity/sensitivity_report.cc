#include "decide/sensitivity/sensitivity_report.h"
#include "run/provenance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace kvaudit {
namespace {

using nlohmann::json;

json Num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }
json Opt(const std::optional<double>& x) { return x ? Num(*x) : json(nullptr); }

double Kld(const ConfigResult& c) { return c.summary.overall.kld_mean; }

// Indices of the parts `keep` accepts, ordered by `key` descending (stable: part order on ties).
template <class Keep, class Key>
std::vector<int> Order(const CandidateResult& c, Keep keep, Key key) {
  std::vector<int> idx;
  for (int i = 0; i < static_cast<int>(c.parts.size()); ++i) {
    if (keep(c.parts[i])) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return key(c.parts[a]) > key(c.parts[b]); });
  return idx;
}

// One configuration end to end: the numbers the sensitivity question needs, by context bucket.
json EndToEnd(const ConfigResult& c, const std::vector<Bucket>& buckets) {
  const FidelitySummary& o = c.summary.overall;
  json j = {{"spec", c.spec},
            {"bytes_per_token", c.bytes_per_token},
            {"kld_mean", Num(o.kld_mean)},
            {"kld_p99", Num(o.kld_p99)},
            {"top1_agree", Num(o.top1_agree)},
            {"buckets", json::array()}};
  for (size_t b = 0; b < c.summary.buckets.size(); ++b) {
    const FidelitySummary& s = c.summary.buckets[b];
    if (s.tokens == 0) continue;
    j["buckets"].push_back({{"from", buckets[b].from}, {"to", buckets[b].to}, {"kld_mean", Num(s.kld_mean)}});
  }
  return j;
}

json Names(const CandidateResult& c, const std::vector<int>& order) {
  json j = json::array();
  for (int i : order) j.push_back(c.parts[i].part.name());
  return j;
}

// Rank (1 = worst) of every part in `order`; 0 for parts it does not hold.
std::vector<int> RankOf(size_t n, const std::vector<int>& order) {
  std::vector<int> rank(n, 0);
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<int>(r) + 1;
  return rank;
}

// The additivity the search assumes: does the all-quantized error equal the sum of the parts'
// own errors (one at a time), or of their marginal shares (all quantized minus leave one out)?
json Additivity(const CandidateResult& c) {
  double sum_one = 0, sum_drop = 0;
  int measured = 0;
  const double all = Kld(c.all_quantized);
  for (const PartResult& p : c.parts) {
    if (!p.one_at_a_time) continue;
    ++measured, sum_one += Kld(*p.one_at_a_time), sum_drop += all - Kld(*p.leave_one_out);
  }
  const bool complete = measured == static_cast<int>(c.parts.size());
  return {{"all_quantized_kld", Num(all)},
          {"sum_one_at_a_time_kld", measured ? Num(sum_one) : json(nullptr)},
          {"ratio_sum_to_all", measured && all > 0 ? Num(sum_one / all) : json(nullptr)},
          {"sum_leave_one_out_drop", measured ? Num(sum_drop) : json(nullptr)},
          {"ratio_drop_to_all", measured && all > 0 ? Num(sum_drop / all) : json(nullptr)},
          {"parts_measured", measured},
          {"parts_total", c.parts.size()},
          {"complete", complete}};
}

// A layer's sliding window (0: global), from the eval's per-layer windows ([n_layers]; empty when no
// layer slides).
int WindowOf(const std::vector<int>& layer_windows, int layer) {
  return layer_windows.empty() ? 0 : layer_windows[static_cast<size_t>(layer)];
}

json PartJson(const CandidateResult& c, size_t i, const std::vector<Bucket>& buckets, int rank_one, int rank_proxy,
              const std::vector<int>& layer_windows) {
  const PartResult& p = c.parts[i];
  json j = {{"part", p.part.name()},
            {"layer", p.part.layer},
            {"window", WindowOf(layer_windows, p.part.layer)},
            {"tensor", p.part.tensor == KvTensor::kK ? "k" : "v"},
            {"measured_end_to_end", p.one_at_a_time.has_value()},
            {"proxy", {{"score", Num(p.proxy)}, {"quantity", ProxyQuantityName(kProxyQuantity)}, {"rank", rank_proxy}}},
            {"one_at_a_time", nullptr},
            {"leave_one_out", nullptr}};
  if (p.one_at_a_time) {
    j["one_at_a_time"] = EndToEnd(*p.one_at_a_time, buckets);
    j["one_at_a_time"]["rank"] = rank_one;
    j["leave_one_out"] = EndToEnd(*p.leave_one_out, buckets);
    j["leave_one_out"]["kld_drop"] = Num(Kld(c.all_quantized) - Kld(*p.leave_one_out));
  }
  return j;
}

// The parts measured one at a time, summed per kind of layer (sliding, global): where the
// candidate's error comes from when the two kinds hold different spans of the context.
struct KindSums {
  int measured[2] = {0, 0};  // [global, sliding]
  double kld[2] = {0, 0};
};
KindSums SumByKind(const CandidateResult& c, const std::vector<int>& layer_windows) {
  KindSums s;
  for (const PartResult& p : c.parts) {
    if (!p.one_at_a_time) continue;
    const int kind = WindowOf(layer_windows, p.part.layer) > 0 ? 1 : 0;
    ++s.measured[kind], s.kld[kind] += Kld(*p.one_at_a_time);
  }
  return s;
}

json CandidateJson(const CandidateResult& c, const std::vector<Bucket>& buckets,
                   const std::vector<int>& layer_windows) {
  const std::vector<int> one = RankOneAtATime(c), proxy = RankProxy(c);
  const std::vector<int> rank_one = RankOf(c.parts.size(), one), rank_proxy = RankOf(c.parts.size(), proxy);
  json j = {{"format", c.candidate.name()},
            {"all_quantized", EndToEnd(c.all_quantized, buckets)},
            {"k_only", EndToEnd(c.k_only, buckets)},
            {"v_only", EndToEnd(c.v_only, buckets)},
            {"parts", json::array()}};
  for (size_t i = 0; i < c.parts.size(); ++i)
    j["parts"].push_back(PartJson(c, i, buckets, rank_one[i], rank_proxy[i], layer_windows));
  if (!layer_windows.empty()) {
    const KindSums s = SumByKind(c, layer_windows);
    for (int kind : {0, 1}) {
      j["by_layer_kind"][kind ? "sliding" : "global"] = {{"parts_measured", s.measured[kind]},
                                                         {"sum_one_at_a_time_kld", Num(s.kld[kind])}};
    }
  }
  j["measured_end_to_end"] = Names(c, Order(
                                          c, [](const PartResult& p) { return p.one_at_a_time.has_value(); },
                                          [](const PartResult&) { return 0.0; }));
  j["rankings"] = {
      {"one_at_a_time", Names(c, one)}, {"leave_one_out", Names(c, RankLeaveOneOut(c))}, {"proxy", Names(c, proxy)}};
  const ProxyAgreement& chosen = c.agreement.front();
  j["spearman_proxy_vs_one_at_a_time"] = Opt(chosen.all);
  j["spearman_parts"] = chosen.parts;
  j["proxy_agreement"] = json::array();
  for (const ProxyAgreement& a : c.agreement) {
    j["proxy_agreement"].push_back({{"quantity", a.quantity},
                                    {"spearman", Opt(a.all)},
                                    {"spearman_k", Opt(a.k)},
                                    {"spearman_v", Opt(a.v)},
                                    {"parts", a.parts}});
  }
  j["additivity"] = Additivity(c);
  return j;
}

}  // namespace

std::vector<int> RankOneAtATime(const CandidateResult& c) {
  return Order(
      c, [](const PartResult& p) { return p.one_at_a_time.has_value(); },
      [](const PartResult& p) { return Kld(*p.one_at_a_time); });
}

std::vector<int> RankLeaveOneOut(const CandidateResult& c) {
  return Order(
      c, [](const PartResult& p) { return p.leave_one_out.has_value(); },
      [](const PartResult& p) { return -Kld(*p.leave_one_out); });
}

std::vector<int> RankProxy(const CandidateResult& c) {
  return Order(
      c, [](const PartResult&) { return true; }, [](const PartResult& p) { return p.proxy; });
}

json SensitivityJson(const SensitivityResult& r) {
  const EvalRunInfo& e = r.eval;
  const int64_t tokens = r.candidates.empty() ? 0 : r.candidates[0].all_quantized.summary.overall.tokens;
  json j = {{"kind", "sensitivity"},
            {"schema_version", kSensitivitySchemaVersion},
            {"model", e.model},
            {"model_hash", r.model_hash},
            {"baseline", e.baseline_spec},
            {"target", r.target},
            {"ctx", e.ctx},
            {"stage", StageName(r.stage)},
            {"parts_measured_per_format", r.top_k}};
  j["data"] = {{"path", e.data},
               {"windows", e.n_windows},
               {"first_window", e.first_window},
               {"tokens", tokens},
               {"tokens_hash", e.tokens_hash}};
  j["proxy"] = {{"quantity", ProxyQuantityName(kProxyQuantity)}, {"attention_samples_per_window", e.attn_samples}};
  j["formats"] = json::array();
  for (const CandidateResult& c : r.candidates)
    j["formats"].push_back(CandidateJson(c, e.aggregate.buckets, e.layer_windows));
  j["stages"] = {{"proxy", r.proxy_results},
                 {"parts", r.parts_results.empty() ? json(nullptr) : json(r.parts_results)}};
  j["run"] = {{"wall_s", r.wall_s},
              {"peak_rss_mb", r.peak_rss_mb},
              {"threads", e.threads},
              {"windows_resumed", {{"proxy", r.windows_resumed_proxy}, {"parts", r.windows_resumed_parts}}}};
  j["run"].update(ProvenanceJson());
  return j;
}

std::string SensitivityTable(const SensitivityResult& r) {
  std::string out;
  char line[320];
  for (const CandidateResult& c : r.candidates) {
    const std::vector<int> one = RankOneAtATime(c), proxy = RankProxy(c);
    const std::vector<int> rank_proxy = RankOf(c.parts.size(), proxy);
    std::snprintf(line, sizeof line,
                  "\nsensitivity of %s against %s: stage %s, %zu of %zu parts end to end, windows %d x %d tokens\n",
                  c.candidate.name().c_str(), r.eval.baseline_spec.c_str(), StageName(r.stage).c_str(), one.size(),
                  c.parts.size(), r.eval.n_windows, r.eval.ctx);
    out += line;
    out += "rank  part    one-at-a-time KLD   KLD p99    top-1   leave-one-out KLD   proxy " +
           ProxyQuantityName(kProxyQuantity) + " (rank)\n";
    // Measured parts worst first, then the others by proxy.
    std::vector<int> rows = one;
    for (int i : proxy) {
      if (!c.parts[i].one_at_a_time) rows.push_back(i);
    }
    for (size_t k = 0; k < rows.size(); ++k) {
      const PartResult& p = c.parts[rows[k]];
      if (p.one_at_a_time) {
        const FidelitySummary& o = p.one_at_a_time->summary.overall;
        std::snprintf(line, sizeof line, "%4zu  %-6s  %17.6f  %9.5f  %6.2f%%  %18.6f   %10.5f (%d)\n", k + 1,
                      p.part.name().c_str(), o.kld_mean, o.kld_p99, 100 * o.top1_agree, Kld(*p.leave_one_out), p.proxy,
                      rank_proxy[rows[k]]);
      } else {
        std::snprintf(line, sizeof line, "   -  %-6s  %17s  %9s  %7s  %18s   %10.5f (%d)\n", p.part.name().c_str(), "-",
                      "-", "-", "-", p.proxy, rank_proxy[rows[k]]);
      }
      out += line;
    }
    const json add = Additivity(c);
    std::snprintf(line, sizeof line, "all quantized %s: KLD %.6f (K only %.6f, V only %.6f)\n",
                  c.all_quantized.spec.c_str(), Kld(c.all_quantized), Kld(c.k_only), Kld(c.v_only));
    out += line;
    if (!one.empty()) {
      std::snprintf(line, sizeof line, "additivity: sum of %d one-at-a-time KLDs %.6f = %.3f x all quantized%s\n",
                    add["parts_measured"].get<int>(), add["sum_one_at_a_time_kld"].get<double>(),
                    add["ratio_sum_to_all"].is_null() ? 0.0 : add["ratio_sum_to_all"].get<double>(),
                    add["complete"].get<bool>() ? "" : " (measured parts only)");
      out += line;
    }
    if (!r.eval.layer_windows.empty() && !one.empty()) {
      const KindSums s = SumByKind(c, r.eval.layer_windows);
      std::snprintf(line, sizeof line,
                    "by layer kind: global layers' %d measured parts sum to KLD %.6f, sliding layers' %d to %.6f\n",
                    s.measured[0], s.kld[0], s.measured[1], s.kld[1]);
      out += line;
    }
    const ProxyAgreement& a = c.agreement.front();
    if (a.all) {
      std::snprintf(line, sizeof line, "Spearman proxy vs one-at-a-time: %.3f over %d parts\n", *a.all, a.parts);
    } else {
      std::snprintf(line, sizeof line, "Spearman proxy vs one-at-a-time: not defined (%d parts measured)\n", a.parts);
    }
    out += line;
  }
  return out;
}

}  // namespace kvaudit
