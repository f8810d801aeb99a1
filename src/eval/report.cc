#include "eval/report.h"

#include <cmath>
#include <cstdio>

#include "model/config.h"
#include "run/provenance.h"

namespace kvaudit {
namespace {

using nlohmann::json;

json Ci(const std::optional<Interval>& ci) { return ci ? json::array({ci->lo, ci->hi}) : json(nullptr); }

json Num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// A bucket's sums by window (eval/fidelity_interval.h WindowTotals): the gate recomputes the
// intervals of a pool of buckets from them.
json WindowSumsJson(const WindowTotals& t) {
  return {{"tokens", t.count},       {"kld", t.kld_sum},   {"top1", t.top1},
          {"delta_nll", t.dnll_sum}, {"kld_sq", t.kld_sq}, {"delta_nll_sq", t.dnll_sq}};
}

json OverallJson(const FidelitySummary& s) {
  return {// stable keys
          {"tokens", s.tokens},
          {"windows", s.windows},
          {"kld_mean", Num(s.kld_mean)},
          {"kld_ci95", Ci(s.kld_ci95)},
          {"kld_p99", Num(s.kld_p99)},
          {"top1_agree", Num(s.top1_agree)},
          {"ppl_ratio", Num(s.ppl_ratio)},
          {"delta_p_mean", Num(s.dp_mean)},
          // extras
          {"kld_median", Num(s.kld_median)},
          {"kld_p90", Num(s.kld_p90)},
          {"kld_p999", Num(s.kld_p999)},
          {"kld_max", Num(s.kld_max)},
          {"top5_drop", Num(s.top5_drop)},
          {"ppl", Num(s.ppl)},
          {"ppl_base", Num(s.ppl_base)},
          {"delta_ppl", Num(s.delta_ppl)},
          {"delta_nll_mean", Num(s.nll_mean - s.nll_base_mean)},
          {"delta_p_p01", Num(s.dp_p01)},
          {"delta_p_p99", Num(s.dp_p99)},
          {"delta_p_rms", Num(s.dp_rms)}};
}

json AttentionJson(const AttnSummary& a, const std::vector<Bucket>& buckets, bool with_buckets) {
  json j = {// stable keys
            {"layer", a.layer},
            {"kv_head", a.kv_head},
            {"k_rel_err", Num(a.k_rel_err)},
            {"v_rel_err", Num(a.v_rel_err)},
            {"attn_kl", Num(a.attn_kl)},
            {"out_rel_err", Num(a.out_rel_err)},
            // extras
            {"attn_tv", Num(a.attn_tv)},
            {"sink_mass", Num(a.sink_mass)},
            {"sink_moved", Num(a.sink_moved)},
            {"queries", a.queries},
            {"grows_from", a.grows_from ? json(a.grows_from) : json(nullptr)}};
  if (a.window > 0) j["window"] = a.window;  // a sliding layer: it reads at most `window` keys
  if (with_buckets) {
    j["buckets"] = json::array();
    for (const AttnSummary::Bucket& b : a.buckets) {
      j["buckets"].push_back({{"from", buckets[static_cast<size_t>(b.bucket)].from},
                              {"to", buckets[static_cast<size_t>(b.bucket)].to},
                              {"queries", b.queries},
                              {"k_rel_err", Num(b.k_rel_err)},
                              {"v_rel_err", Num(b.v_rel_err)},
                              {"attn_kl", Num(b.attn_kl)},
                              {"out_rel_err", Num(b.out_rel_err)}});
    }
  }
  return j;
}

// "2048", "all measured (>= 4095)", "none": the words of SafeRange.
std::string SafeText(const SafeRange& r) {
  if (!r.up_to) return "none";
  if (r.is_all_measured) return "all measured (>= " + std::to_string(*r.up_to) + ")";
  return std::to_string(*r.up_to);
}

std::string CiText(const FidelitySummary& s) {
  char buf[96];
  if (s.kld_ci95) {
    std::snprintf(buf, sizeof(buf), "%.6f [%.6f, %.6f]", s.kld_mean, s.kld_ci95->lo, s.kld_ci95->hi);
  } else {
    std::snprintf(buf, sizeof(buf), "%.6f", s.kld_mean);
  }
  return buf;
}

}  // namespace

json ResultsJson(const EvalRunInfo& info, const std::vector<ConfigResult>& configs) {
  const AggregateOptions& a = info.aggregate;
  json j = {{"schema_version", kEvalSchemaVersion},
            {"kind", "eval"},
            {"model", info.model},
            {"model_hash", info.model_hash},
            {"model_hash_kind", info.model_hash_kind},
            {"ctx", info.ctx},
            {"score_from", info.score_from}};
  if (info.ubatch > 0) j["ubatch"] = info.ubatch;
  const FidelitySummary* any = configs.empty() ? nullptr : &configs[0].summary.overall;
  const bool remote_base = !info.baseline_endpoint.is_null();
  j["baseline"] = {{"spec", info.baseline_spec},
                   {"bytes_per_token", remote_base ? json(nullptr) : json(info.baseline_bytes_per_token)},
                   {"ppl", any ? Num(any->ppl_base) : json(nullptr)},
                   {"nll_mean", any ? Num(any->nll_base_mean) : json(nullptr)}};
  if (remote_base) j["baseline"]["endpoint"] = info.baseline_endpoint;
  if (!info.notes.empty()) j["notes"] = info.notes;
  j["data"] = {{"path", info.data},
               {"per_doc", info.per_doc},
               {"windows", info.n_windows},
               {"first_window", info.first_window},
               {"tokens", any ? any->tokens : 0},
               {"tokens_hash", info.tokens_hash}};
  j["settings"] = {{"kld_threshold", a.kld_threshold},
                   {"bootstrap_replicates", a.bootstrap.replicates},
                   {"bootstrap_seed", a.bootstrap.seed},
                   {"bucket_unit", "context length (0-based position + 1)"},
                   {"attention_samples_per_window", info.attn_samples}};
  j["configs"] = json::array();
  for (const ConfigResult& c : configs) {
    const ConfigSummary& s = c.summary;
    const bool remote = !c.endpoint.is_null();
    json cj = {{"spec", c.spec},
               {"bytes_per_token", remote ? json(nullptr) : json(c.bytes_per_token)},
               {"overall", OverallJson(s.overall)}};
    // Through an endpoint the KLD is a lower bound from the top-k logprobs (eval/topk_fidelity.h).
    cj["kld_estimate"] = remote || remote_base
                             ? json({{"kind", "lower_bound_from_top_k"}, {"top_logprobs", info.top_logprobs}})
                             : json({{"kind", "exact"}});
    if (remote) cj["endpoint"] = c.endpoint;
    cj["buckets"] = json::array();
    for (size_t b = 0; b < s.buckets.size(); ++b) {
      const FidelitySummary& bs = s.buckets[b];
      if (bs.tokens == 0) continue;  // e.g. buckets wholly before --score-from
      cj["buckets"].push_back(
          {{"from", a.buckets[b].from},
           {"to", a.buckets[b].to},
           {"tokens", bs.tokens},
           {"windows", bs.windows},
           {"kld_mean", Num(bs.kld_mean)},
           {"kld_ci95", Ci(bs.kld_ci95)},
           {"top1_agree", Num(bs.top1_agree)},
           {"top1_agree_ci95", Ci(bs.top1_agree_ci95)},
           {"ppl_ratio", Num(bs.ppl_ratio)},
           {"ppl_ratio_ci95", Ci(bs.ppl_ratio_ci95)},
           {"kld_p99", Num(bs.kld_p99)},
           {"kld_p99_ci95", Ci(bs.kld_p99_ci95)},
           {"window_sums", WindowSumsJson(bs.totals)},
           {"delta_p_mean", Num(bs.dp_mean)},
           {"measured_to", b < s.bucket_last_len.size() ? json(s.bucket_last_len[b]) : json(nullptr)}});
    }
    cj["safe_up_to"] = s.safe.up_to ? json(*s.safe.up_to) : json(nullptr);
    cj["safe_up_to_is_all_measured"] = s.safe.is_all_measured;
    cj["attention"] = json::array();
    for (const AttnSummary& at : c.attention) cj["attention"].push_back(AttentionJson(at, a.buckets, false));
    cj["attention_worst"] = json::array();
    for (const AttnSummary& at : WorstHeads(c.attention, 5))
      cj["attention_worst"].push_back(AttentionJson(at, a.buckets, true));
    cj["token_classes"] = json::array();
    for (const ClassSummary& k : s.classes) {
      cj["token_classes"].push_back({{"class", k.name},
                                     {"tokens", k.tokens},
                                     {"kld_mean", k.tokens ? Num(k.kld_mean) : json(nullptr)},
                                     {"top1_agree", k.tokens ? Num(k.top1_agree) : json(nullptr)}});
    }
    cj["bytes_vs_baseline"] =
        info.baseline_bytes_per_token && !remote && !remote_base
            ? json(static_cast<double>(c.bytes_per_token) / static_cast<double>(info.baseline_bytes_per_token))
            : json(nullptr);
    j["configs"].push_back(std::move(cj));
  }
  j["run"] = {{"wall_s", info.wall_s},
              {"peak_rss_mb", info.peak_rss_mb},
              {"threads", info.threads},
              {"windows_resumed", info.windows_resumed}};
  j["run"].update(ProvenanceJson());
  j["model_info"] = {{"architecture", info.model_architecture},
                     {"layers", info.n_layers},
                     {"kv_heads", info.n_kv_heads},
                     {"head_dim", info.head_dim}};
  if (!info.layer_windows.empty()) j["model_info"]["layer_windows"] = info.layer_windows;
  return j;
}

std::string ResultsTable(const EvalRunInfo& info, const std::vector<ConfigResult>& configs) {
  std::string out;
  char line[640];
  const AggregateOptions& a = info.aggregate;
  if (!configs.empty()) {
    const FidelitySummary& o = configs[0].summary.overall;
    std::snprintf(line, sizeof(line),
                  "baseline %s: PPL %.4f over %lld tokens (%d windows of ctx %d, positions >= %d)\n",
                  info.baseline_spec.c_str(), o.ppl_base, static_cast<long long>(o.tokens), info.n_windows, info.ctx,
                  info.score_from);
    out += line;
  }
  std::snprintf(line, sizeof(line), "%-28s %-11s %7s  %-32s %8s %10s %10s\n", "config", "context", "tokens",
                "mean KLD [95% CI]", "top-1 %", "PPL ratio", "mean dp");
  out += line;
  for (const ConfigResult& c : configs) {
    auto row = [&](const std::string& name, const std::string& range, const FidelitySummary& s) {
      std::snprintf(line, sizeof(line), "%-28s %-11s %7lld  %-32s %8.3f %10.5f %10.6f\n", name.c_str(), range.c_str(),
                    static_cast<long long>(s.tokens), CiText(s).c_str(), 100.0 * s.top1_agree, s.ppl_ratio, s.dp_mean);
      out += line;
    };
    row(c.spec, "all", c.summary.overall);
    for (size_t b = 0; b < c.summary.buckets.size(); ++b) {
      if (c.summary.buckets[b].tokens == 0) continue;
      row("", std::to_string(a.buckets[b].from) + "-" + std::to_string(a.buckets[b].to), c.summary.buckets[b]);
    }
  }
  if (info.attn_samples > 0) {
    std::snprintf(
        line, sizeof(line),
        "\nattention: the 5 (layer, KV head) with the largest attention-output error (baseline queries and rows,\n"
        "%d sampled positions per window; k/v/out: relative L2 error; sink: baseline weight on token 0 -> moved)\n",
        info.attn_samples);
    out += line;
    std::snprintf(line, sizeof(line), "%-28s %5s %4s %9s %9s %10s %9s %15s  %s\n", "config", "layer", "head", "k err",
                  "v err", "attn KL", "out err", "sink -> moved", "out err by context (grows from)");
    out += line;
    for (const ConfigResult& c : configs) {
      bool first = true;
      for (const AttnSummary& at : WorstHeads(c.attention, 5)) {
        std::string series;
        for (const AttnSummary::Bucket& b : at.buckets) {
          char cellbuf[48];
          std::snprintf(cellbuf, sizeof(cellbuf), "%s%d:%.3g", series.empty() ? "" : " ",
                        a.buckets[static_cast<size_t>(b.bucket)].to, b.out_rel_err);
          series += cellbuf;
        }
        series += at.grows_from ? " (" + std::to_string(at.grows_from) + ")" : " (-)";
        std::snprintf(line, sizeof(line), "%-28s %5d %4d %9.5f %9.5f %10.3g %9.5f %7.3f->%-7.4f  %s\n",
                      first ? c.spec.c_str() : "", at.layer, at.kv_head, at.k_rel_err, at.v_rel_err, at.attn_kl,
                      at.out_rel_err, at.sink_mass, at.sink_moved, series.c_str());
        out += line;
        first = false;
      }
    }
  }
  out += "\nby class of the true next token: mean KLD / top-1 % (tokens)\n";
  for (const ConfigResult& c : configs) {
    out += "  " + c.spec + ":";
    for (const ClassSummary& k : c.summary.classes) {
      std::snprintf(line, sizeof(line), "  %s %.6f/%.2f (%lld)", k.name.c_str(), k.kld_mean, 100.0 * k.top1_agree,
                    static_cast<long long>(k.tokens));
      out += line;
    }
    out += "\n";
  }
  std::snprintf(line, sizeof(line), "\n%-28s %12s %9s %10s %8s %10s  %s\n", "memory vs fidelity", "bytes/token",
                "of f16", "mean KLD", "top-1 %", "PPL ratio", "safe up to");
  out += line;
  for (const ConfigResult& c : configs) {
    const FidelitySummary& o = c.summary.overall;
    // The share of the f16 cache, as audit and recommend print it; "-" through an endpoint (no bytes).
    const uint64_t f16 = F16KvBytesPerToken(info.n_layers, info.n_kv_heads, info.head_dim);
    char of_f16[16] = "-";
    if (c.bytes_per_token > 0 && f16 > 0)
      std::snprintf(of_f16, sizeof(of_f16), "%.0f%%", 100.0 * static_cast<double>(c.bytes_per_token) / f16);
    std::snprintf(line, sizeof(line), "%-28s %12llu %9s %10.6f %8.3f %10.5f  %s\n", c.spec.c_str(),
                  static_cast<unsigned long long>(c.bytes_per_token), of_f16, o.kld_mean, 100.0 * o.top1_agree,
                  o.ppl_ratio, SafeText(c.summary.safe).c_str());
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "(safe up to: the longest measured context L such that every context bucket up to L, from the\n"
                " first, has mean KLD <= %g; a later bucket back under it does not count; none: the first\n"
                " bucket already exceeds it)\n",
                a.kld_threshold);
  out += line;
  if (info.top_logprobs > 0) {
    std::snprintf(line, sizeof(line),
                  "(through an endpoint or against a reference: an endpoint's bytes/token unknown (0); mean KLD\n"
                  " is a lower bound from the top %d logprobs per position; top-1, top-5 drop and PPL ratio are\n"
                  " exact: docs/metrics.md)\n",
                  info.top_logprobs);
    out += line;
  }
  for (const std::string& n : info.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace kvaudit
