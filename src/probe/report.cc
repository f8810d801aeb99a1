#include "probe/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "probe/sequences.h"
#include "run/provenance.h"

namespace kvaudit {
namespace {

using nlohmann::json;

json Num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// Text for one table cell: newlines and tabs made visible, cut to `width` characters.
std::string Visible(const std::string& s, size_t width) {
  std::string out;
  for (char ch : s) {
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else {
      out += ch;
    }
    if (out.size() >= width) return out.substr(0, width) + "...";
  }
  return out;
}

struct VarianceRow {
  std::string config;
  int length = 0, n = 0, samples = 0, identical_pairs = 0, pairs = 0, diverged = 0;
  double baseline_distinct = 0, config_distinct = 0, baseline_spread = 0, config_spread = 0, divergence_sum = 0;
};

struct DriftRow {
  std::string config;
  int length = 0, n = 0, identical = 0, diverged = 0;
  double divergence_sum = 0, edit_sum = 0, kl_mean_sum = 0, kl_max = 0, rep_base_sum = 0, rep_cfg_sum = 0;
};

std::vector<VarianceRow> VarianceRows(const std::vector<VarianceRecord>& recs, const std::vector<std::string>& specs) {
  std::map<std::pair<size_t, int>, VarianceRow> rows;  // (config, length)
  for (const VarianceRecord& r : recs) {
    const auto& base = r.samples[0];
    for (size_t c = 0; c < specs.size(); ++c) {
      const auto& cfg = r.samples[c + 1];
      VarianceRow& row = rows[{c, r.length}];
      row.config = specs[c], row.length = r.length, row.n += 1, row.samples = static_cast<int>(base.size());
      row.baseline_distinct += DistinctCount(base), row.config_distinct += DistinctCount(cfg);
      row.baseline_spread += MeanPairwiseEditDistance(base), row.config_spread += MeanPairwiseEditDistance(cfg);
      for (size_t i = 0; i < base.size() && i < cfg.size(); ++i) {
        row.pairs += 1;
        const auto d = FirstDivergence(base[i], cfg[i]);
        if (!d) {
          row.identical_pairs += 1;
        } else {
          row.diverged += 1, row.divergence_sum += *d;
        }
      }
    }
  }
  std::vector<VarianceRow> out;
  for (auto& [k, row] : rows) {
    row.baseline_distinct /= row.n, row.config_distinct /= row.n, row.baseline_spread /= row.n,
        row.config_spread /= row.n;
    out.push_back(row);
  }
  return out;
}

std::vector<DriftRow> DriftRows(const std::vector<DriftRecord>& recs, const std::vector<std::string>& specs) {
  std::map<std::pair<size_t, int>, DriftRow> rows;
  for (const DriftRecord& r : recs) {
    for (size_t c = 0; c < specs.size(); ++c) {
      DriftRow& row = rows[{c, r.length}];
      row.config = specs[c], row.length = r.length, row.n += 1;
      const auto d = FirstDivergence(r.outputs[0], r.outputs[c + 1]);
      if (!d) {
        row.identical += 1;
      } else {
        row.diverged += 1, row.divergence_sum += *d;
      }
      row.edit_sum += TokenEditDistance(r.outputs[0], r.outputs[c + 1]);
      row.kl_mean_sum += r.kl_mean[c], row.kl_max = std::max(row.kl_max, r.kl_max[c]);
      row.rep_base_sum += RepeatedNgramShare(r.outputs[0]), row.rep_cfg_sum += RepeatedNgramShare(r.outputs[c + 1]);
    }
  }
  std::vector<DriftRow> out;
  for (auto& [k, row] : rows) out.push_back(row);
  return out;
}

// Cache-induced failures: the baseline passed, the configuration failed. Record order.
struct WorstCase {
  const ProbeRecord* rec;
  size_t config;
};
std::vector<WorstCase> CacheInduced(const std::vector<ProbeRecord>& probes, size_t n_configs, size_t limit) {
  std::vector<WorstCase> out;
  for (const ProbeRecord& r : probes) {
    for (size_t c = 0; c < n_configs; ++c) {
      if (r.runs[0].pass && !r.runs[c + 1].pass && out.size() < limit) out.push_back({&r, c});
    }
  }
  return out;
}

// On a model with sliding-window layers: the needle and exact checks whose fact lies beyond the
// window (only the global layers can read it) against those inside, per configuration.
std::string WindowLines(const std::vector<ProbeRecord>& probes, const std::vector<std::string>& specs) {
  std::string out;
  for (size_t c = 0; c < specs.size(); ++c) {
    int n[2] = {0, 0}, base[2] = {0, 0}, conf[2] = {0, 0};  // [inside, beyond]
    for (const ProbeRecord& r : probes) {
      if (r.fact_distance < 0) continue;
      const int w = r.beyond_window ? 1 : 0;
      ++n[w], base[w] += r.runs[0].pass, conf[w] += r.runs[c + 1].pass;
    }
    if (n[0] + n[1] == 0) return "";
    char line[320];
    std::snprintf(line, sizeof(line),
                  "facts inside the sliding window: %d checks, baseline passes %d, %s passes %d; beyond it (only "
                  "the global layers read them): %d checks, baseline %d, configuration %d\n",
                  n[0], base[0], specs[c].c_str(), conf[0], n[1], base[1], conf[1]);
    out += line;
  }
  return out + "\n";
}

}  // namespace

json ToJson(const ProbeRecord& r) {
  json runs = json::array();
  for (const ProbeRun& x : r.runs) {
    runs.push_back(
        {{"pass", x.pass}, {"text", x.text}, {"first_wrong_token", x.first_wrong_token}, {"detail", x.detail}});
  }
  json j = {{"kind", "check"},    {"id", r.id},       {"family", r.family},     {"variant", r.variant},
            {"length", r.length}, {"depth", r.depth}, {"expected", r.expected}, {"runs", runs}};
  if (r.fact_distance >= 0) j["fact_distance"] = r.fact_distance, j["beyond_window"] = r.beyond_window;
  return j;
}

json ToJson(const VarianceRecord& r) {
  return {{"kind", "variance"}, {"id", r.id}, {"length", r.length}, {"samples", r.samples}};
}

json ToJson(const DriftRecord& r) {
  return {{"kind", "drift"},      {"id", r.id},           {"length", r.length},
          {"outputs", r.outputs}, {"kl_mean", r.kl_mean}, {"kl_max", r.kl_max}};
}

std::optional<ProbeRecord> ProbeRecordFromJson(const json& j, size_t n_caches) {
  try {
    ProbeRecord r;
    r.id = j.at("id").get<std::string>(), r.family = j.at("family").get<std::string>();
    r.variant = j.at("variant").get<std::string>(), r.length = j.at("length").get<int>();
    r.depth = j.at("depth").get<int>(), r.expected = j.at("expected").get<std::string>();
    if (j.contains("fact_distance")) {
      r.fact_distance = j.at("fact_distance").get<int>(), r.beyond_window = j.at("beyond_window").get<bool>();
    }
    const json& runs = j.at("runs");
    if (!runs.is_array() || runs.size() != n_caches) return std::nullopt;
    for (const json& x : runs) {
      r.runs.push_back({x.at("pass").get<bool>(), x.at("text").get<std::string>(), x.at("first_wrong_token").get<int>(),
                        x.at("detail").get<std::string>()});
    }
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::optional<VarianceRecord> VarianceRecordFromJson(const json& j, size_t n_caches) {
  try {
    VarianceRecord r;
    r.id = j.at("id").get<std::string>(), r.length = j.at("length").get<int>();
    r.samples = j.at("samples").get<std::vector<std::vector<std::vector<int32_t>>>>();
    if (r.samples.size() != n_caches) return std::nullopt;
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::optional<DriftRecord> DriftRecordFromJson(const json& j, size_t n_caches) {
  try {
    DriftRecord r;
    r.id = j.at("id").get<std::string>(), r.length = j.at("length").get<int>();
    r.outputs = j.at("outputs").get<std::vector<std::vector<int32_t>>>();
    r.kl_mean = j.at("kl_mean").get<std::vector<double>>(), r.kl_max = j.at("kl_max").get<std::vector<double>>();
    if (r.outputs.size() != n_caches || r.kl_mean.size() + 1 != n_caches || r.kl_max.size() + 1 != n_caches) {
      return std::nullopt;
    }
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::vector<ProbeRow> AttributionRows(const std::vector<ProbeRecord>& records, const std::vector<std::string>& specs) {
  // Key order: family and variant as first seen, then configuration, length, depth.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::tuple<std::string, std::string, size_t, int, int>, std::vector<ProbeOutcome>> cells;
  for (const ProbeRecord& r : records) {
    const auto fv = std::make_pair(r.family, r.variant);
    if (std::find(order.begin(), order.end(), fv) == order.end()) order.push_back(fv);
    const int depth = r.family == "needle" ? r.depth : -1;
    for (size_t c = 0; c < specs.size(); ++c) {
      cells[{r.family, r.variant, c, r.length, depth}].push_back({r.runs[0].pass, r.runs[c + 1].pass});
    }
  }
  std::vector<ProbeRow> rows;
  for (const auto& [family, variant] : order) {
    for (const auto& [key, outcomes] : cells) {
      if (std::get<0>(key) != family || std::get<1>(key) != variant) continue;
      rows.push_back(
          {family, variant, specs[std::get<2>(key)], std::get<3>(key), std::get<4>(key), AttributeProbes(outcomes)});
    }
  }
  HolmCorrectPerConfig(rows);
  return rows;
}

// One row per (custom probe, configuration): the team's own probes, each named, so a probe lost
// under a configuration is never only a count in a pooled row (the gate names it).
json CustomProbesJson(const std::vector<ProbeRecord>& probes, const std::vector<std::string>& specs) {
  constexpr std::string_view kPrefix = "custom/";
  json out = json::array();
  for (const ProbeRecord& r : probes) {
    if (r.family != "custom") continue;
    const std::string id = r.id.starts_with(kPrefix) ? r.id.substr(kPrefix.size()) : r.id;
    for (size_t c = 0; c < specs.size(); ++c) {
      out.push_back({{"config", specs[c]},
                     {"id", id},
                     {"tokens", r.length},
                     {"baseline_pass", r.runs[0].pass},
                     {"pass", r.runs[c + 1].pass},
                     {"detail", r.runs[c + 1].pass ? "" : r.runs[c + 1].detail}});
    }
  }
  return out;
}

json ProbeResultsJson(const ProbeRunInfo& info, const std::vector<ProbeRecord>& probes,
                      const std::vector<VarianceRecord>& variance, const std::vector<DriftRecord>& drift) {
  json j = {{"schema_version", kProbeSchemaVersion},
            {"kind", "probe"},
            {"alpha", kProbeAlpha},
            {"model", info.model},
            {"model_hash", info.model_hash},
            {"model_hash_kind", info.model_hash_kind},
            {"probe_seed", info.probe_seed},
            {"sampling_seed", info.sampling_seed},
            {"baseline", info.baseline_spec},
            {"chat_template", info.chat_format}};
  j["data"] = info.data.empty() ? json(nullptr) : json(info.data);  // null: custom probes only, no haystack
  j["configs"] = json::array();
  for (size_t c = 0; c < info.specs.size(); ++c) {
    const bool remote = c < info.endpoints.size() && !info.endpoints[c].is_null();
    json cj = {{"spec", info.specs[c]}, {"bytes_per_token", remote ? json(nullptr) : json(info.bytes_per_token[c])}};
    if (remote) cj["endpoint"] = info.endpoints[c];
    j["configs"].push_back(std::move(cj));
  }
  if (!info.baseline_endpoint.is_null()) j["baseline_endpoint"] = info.baseline_endpoint;
  if (!info.notes.empty()) j["notes"] = info.notes;
  const std::vector<ProbeRow> rows = AttributionRows(probes, info.specs);
  j["probes"] = json::array();
  for (const ProbeRow& r : rows) j["probes"].push_back(CellJson(r));
  j["pooled"] = json::array();
  for (const PooledRow& r : PooledRows(rows, info.specs)) j["pooled"].push_back(PooledJson(r));
  j["custom_probes"] = CustomProbesJson(probes, info.specs);
  j["variance"] = json::array();
  for (const VarianceRow& v : VarianceRows(variance, info.specs)) {
    j["variance"].push_back(
        {{"config", v.config},
         {"length", v.length},
         {"n", v.n},
         {"samples", v.samples},
         {"baseline_distinct", v.baseline_distinct},
         {"config_distinct", v.config_distinct},
         {"baseline_spread", v.baseline_spread},
         {"config_spread", v.config_spread},
         {"pairs", v.pairs},
         {"identical_pairs", v.identical_pairs},
         {"first_divergence_mean", v.diverged ? json(v.divergence_sum / v.diverged) : json(nullptr)},
         {"spread_larger", v.config_spread > v.baseline_spread}});
  }
  j["drift"] = json::array();
  // Exact between in-process caches; through an endpoint a lower bound from top-k logprobs.
  auto remote_config = [&](const std::string& spec) {
    for (size_t c = 0; c < info.specs.size(); ++c) {
      if (info.specs[c] == spec) return c < info.endpoints.size() && !info.endpoints[c].is_null();
    }
    return false;
  };
  for (const DriftRow& d : DriftRows(drift, info.specs)) {
    const bool bound = !info.baseline_endpoint.is_null() || remote_config(d.config);
    j["drift"].push_back({{"config", d.config},
                          {"length", d.length},
                          {"n", d.n},
                          {"identical", d.identical},
                          {"first_divergence_mean", d.diverged ? json(d.divergence_sum / d.diverged) : json(nullptr)},
                          {"edit_distance_mean", d.edit_sum / d.n},
                          {"kl_mean", Num(d.kl_mean_sum / d.n)},
                          {"kl_max", Num(d.kl_max)},
                          {"baseline_repetition", d.rep_base_sum / d.n},
                          {"config_repetition", d.rep_cfg_sum / d.n},
                          {"kl_estimate", bound ? "lower_bound_from_top_k" : "exact"}});
  }
  j["worst_cases"] = json::array();
  for (const WorstCase& w : CacheInduced(probes, info.specs.size(), 20)) {
    const ProbeRun& b = w.rec->runs[0];
    const ProbeRun& c = w.rec->runs[w.config + 1];
    j["worst_cases"].push_back({{"id", w.rec->id},
                                {"config", info.specs[w.config]},
                                {"expected", w.rec->expected},
                                {"baseline_output", b.text},
                                {"config_output", c.text},
                                {"first_wrong_token", c.first_wrong_token},
                                {"detail", c.detail}});
  }
  j["run"] = {{"wall_s", info.wall_s},
              {"peak_rss_mb", info.peak_rss_mb},
              {"threads", info.threads},
              {"instances", info.instances},
              {"instances_resumed", info.resumed}};
  j["run"].update(ProvenanceJson());
  return j;
}

std::string ProbeResultsTable(const ProbeRunInfo& info, const std::vector<ProbeRecord>& probes,
                              const std::vector<VarianceRecord>& variance, const std::vector<DriftRecord>& drift) {
  std::string out;
  char line[512];
  const std::vector<ProbeRow> rows = AttributionRows(probes, info.specs);
  // Needle grids: length x depth, cell = baseline passes / configuration passes of n.
  for (const std::string& spec : info.specs) {
    std::set<std::string> variants;
    for (const ProbeRow& r : rows) {
      if (r.family == "needle" && r.config == spec) variants.insert(r.variant);
    }
    for (const std::string& v : variants) {
      std::set<int> lengths, depths;
      for (const ProbeRow& r : rows) {
        if (r.family == "needle" && r.variant == v && r.config == spec)
          lengths.insert(r.length), depths.insert(r.depth);
      }
      out += "needle/" + v + " under " + spec + ": baseline passes / configuration passes of n, by length x depth\n";
      std::snprintf(line, sizeof(line), "%8s", "length");
      out += line;
      for (int d : depths) std::snprintf(line, sizeof(line), " %8s", (std::to_string(d) + "%").c_str()), out += line;
      out += "\n";
      for (int L : lengths) {
        std::snprintf(line, sizeof(line), "%8d", L);
        out += line;
        for (int d : depths) {
          std::string cell = "-";
          for (const ProbeRow& r : rows) {
            if (r.family == "needle" && r.variant == v && r.config == spec && r.length == L && r.depth == d) {
              const auto b = r.a.both_pass + r.a.cache_induced, c = r.a.both_pass + r.a.recovered;
              cell = std::to_string(b) + "/" + std::to_string(c) + (r.a.cache_induced ? "!" : "");
            }
          }
          std::snprintf(line, sizeof(line), " %8s", cell.c_str());
          out += line;
        }
        out += "\n";
      }
      out += "  (! = at least one cache-induced failure)\n\n";
    }
  }
  out += WindowLines(probes, info.specs);
  out += LengthTable(rows);
  out += PooledTable(PooledRows(rows, info.specs));
  const auto worst = CacheInduced(probes, info.specs.size(), 10);
  if (!worst.empty()) {
    out += "\ncache-induced failures (first 10): expected | baseline output | configuration output\n";
    for (const WorstCase& w : worst) {
      std::snprintf(line, sizeof(line),
                    "  %s under %s (first wrong token %d)\n    expected %s\n    baseline %s\n    config   %s\n",
                    w.rec->id.c_str(), info.specs[w.config].c_str(), w.rec->runs[w.config + 1].first_wrong_token,
                    Visible(w.rec->expected, 80).c_str(), Visible(w.rec->runs[0].text, 80).c_str(),
                    Visible(w.rec->runs[w.config + 1].text, 80).c_str());
      out += line;
    }
  }
  const auto vrows = VarianceRows(variance, info.specs);
  if (!vrows.empty()) {
    std::snprintf(line, sizeof(line), "\n%-26s %6s %4s %10s %10s %10s %10s %12s %10s\n", "variance: config", "length",
                  "K", "distinct b", "distinct c", "spread b", "spread c", "same seed =", "diverge at");
    out += line;
    for (const VarianceRow& v : vrows) {
      const std::string div = v.diverged ? std::to_string(static_cast<int>(v.divergence_sum / v.diverged)) : "-";
      std::snprintf(line, sizeof(line), "%-26s %6d %4d %10.2f %10.2f %10.2f %10.2f %7d of %2d %10s%s\n",
                    v.config.c_str(), v.length, v.samples, v.baseline_distinct, v.config_distinct, v.baseline_spread,
                    v.config_spread, v.identical_pairs, v.pairs, div.c_str(),
                    v.config_spread > v.baseline_spread ? "  (wider)" : "");
      out += line;
    }
    out +=
        "  (spread: mean pairwise token edit distance of the K samples; same seed =: samples identical to the\n"
        "   baseline's sample with the same seed; diverge at: mean first differing token of the others)\n";
  }
  const auto drows = DriftRows(drift, info.specs);
  if (!drows.empty()) {
    std::snprintf(line, sizeof(line), "\n%-26s %6s %4s %9s %10s %9s %10s %10s %8s %8s\n", "drift: config", "length",
                  "n", "identical", "diverge at", "edit", "KL mean", "KL max", "rep b", "rep c");
    out += line;
    for (const DriftRow& d : drows) {
      const std::string div = d.diverged ? std::to_string(static_cast<int>(d.divergence_sum / d.diverged)) : "-";
      std::snprintf(line, sizeof(line), "%-26s %6d %4d %9d %10s %9.1f %10.4g %10.4g %8.3f %8.3f\n", d.config.c_str(),
                    d.length, d.n, d.identical, div.c_str(), d.edit_sum / d.n, d.kl_mean_sum / d.n, d.kl_max,
                    d.rep_base_sum / d.n, d.rep_cfg_sum / d.n);
      out += line;
    }
    out += "  (greedy; KL along the baseline's path, teacher-forced; rep: share of repeated 4-grams)\n";
  }
  std::snprintf(line, sizeof(line), "\nmemory: baseline %s", info.baseline_spec.c_str());
  out += line;
  for (size_t c = 0; c < info.specs.size(); ++c) {
    const bool remote = c < info.endpoints.size() && !info.endpoints[c].is_null();
    if (remote) {
      std::snprintf(line, sizeof(line), "; %s endpoint %s", info.specs[c].c_str(),
                    info.endpoints[c].value("url", std::string()).c_str());
    } else {
      std::snprintf(line, sizeof(line), "; %s %llu B/token", info.specs[c].c_str(),
                    static_cast<unsigned long long>(info.bytes_per_token[c]));
    }
    out += line;
  }
  out += "\n";
  return out;
}

}  // namespace kvaudit
