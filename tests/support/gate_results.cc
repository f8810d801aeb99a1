#include "support/gate_results.h"

#include <cmath>
#include <fstream>

namespace kvaudit::testing {

using nlohmann::json;

namespace {

json Ci(const std::optional<Interval>& ci, double value) {
  return ci ? json::array({ci->lo, ci->hi}) : json::array({value, value});
}

json WindowSums(const SyntheticBucket& b) {
  json tokens = json::array(), kld = json::array(), top1 = json::array(), dnll = json::array();
  const double log_ratio = std::log(b.ppl_ratio);
  for (int w = 0; w < b.windows; ++w) {
    const double n = static_cast<double>(b.tokens / b.windows + (w < b.tokens % b.windows ? 1 : 0));
    tokens.push_back(n), kld.push_back(n * b.kld_mean), top1.push_back(n * b.top1_agree);
    dnll.push_back(n * log_ratio);
  }
  const double n = static_cast<double>(b.tokens);
  return {{"tokens", tokens},
          {"kld", kld},
          {"top1", top1},
          {"delta_nll", dnll},
          {"kld_sq", n * b.kld_mean * b.kld_mean},
          {"delta_nll_sq", n * log_ratio * log_ratio}};
}

}  // namespace

json SyntheticEvalResults(const std::vector<SyntheticEvalConfig>& configs, const std::string& model_hash) {
  json j = {{"schema_version", 2},
            {"kind", "eval"},
            {"model", "synthetic"},
            {"model_hash", model_hash},
            {"ctx", 4096},
            {"score_from", 0},
            {"baseline", {{"spec", "k=f32,v=f32"}}}};
  j["configs"] = json::array();
  for (const SyntheticEvalConfig& c : configs) {
    json buckets = json::array();
    for (const SyntheticBucket& b : c.buckets) {
      buckets.push_back({{"from", b.from},
                         {"to", b.to},
                         {"tokens", b.tokens},
                         {"windows", b.windows},
                         {"kld_mean", b.kld_mean},
                         {"kld_ci95", Ci(b.kld_ci, b.kld_mean)},
                         {"kld_p99", b.kld_p99},
                         {"kld_p99_ci95", Ci(b.kld_p99_ci, b.kld_p99)},
                         {"top1_agree", b.top1_agree},
                         {"top1_agree_ci95", Ci(b.top1_ci, b.top1_agree)},
                         {"ppl_ratio", b.ppl_ratio},
                         {"ppl_ratio_ci95", Ci(b.ppl_ci, b.ppl_ratio)},
                         {"window_sums", WindowSums(b)},
                         {"measured_to", b.to}});
    }
    j["configs"].push_back({{"spec", c.spec}, {"bytes_per_token", 1}, {"buckets", buckets}});
  }
  return j;
}

namespace {

// A row that gives no baseline_pass has the baseline pass every instance it can: all but the
// recovered ones (which the baseline failed).
int BothPass(const PooledFamilyRow& f) {
  const int baseline_pass = f.baseline_pass > 0 ? f.baseline_pass : f.n - f.recovered;
  return baseline_pass - f.cache_induced;
}

}  // namespace

json SyntheticProbeResults(const std::vector<ProbeConfigResult>& configs, const std::string& model_hash) {
  json j = {{"schema_version", 2},      {"kind", "probe"},           {"alpha", 0.05},          {"model", "synthetic"},
            {"model_hash", model_hash}, {"baseline", "k=f32,v=f32"}, {"probes", json::array()}};
  j["configs"] = json::array(), j["pooled"] = json::array(), j["variance"] = json::array(), j["drift"] = json::array();
  j["custom_probes"] = json::array();
  for (const ProbeConfigResult& c : configs) {
    j["configs"].push_back({{"spec", c.spec}, {"bytes_per_token", 1}});
    if (c.endpoint) j["configs"].back()["endpoint"] = {{"url", "http://127.0.0.1:9/v1"}};
    for (const PooledFamilyRow& f : c.pooled) {
      j["pooled"].push_back({{"config", c.spec},
                             {"family", f.family},
                             {"cells", 1},
                             {"n", f.n},
                             {"cache_induced", f.cache_induced},
                             {"recovered", f.recovered},
                             {"both_pass", BothPass(f)},
                             {"mcnemar_p", f.p_holm},
                             {"mcnemar_p_holm", f.p_holm},
                             {"significant", f.significant}});
    }
    if (c.variance_pairs > 0) {
      j["variance"].push_back({{"config", c.spec},
                               {"length", 512},
                               {"n", 1},
                               {"samples", c.variance_pairs},
                               {"pairs", c.variance_pairs},
                               {"identical_pairs", c.variance_identical}});
    }
    for (const CustomProbeOutcome& o : c.custom) {
      j["custom_probes"].push_back({{"config", c.spec},
                                    {"id", o.id},
                                    {"tokens", o.tokens},
                                    {"baseline_pass", o.baseline_pass},
                                    {"pass", o.pass},
                                    {"detail", ""}});
    }
    for (const auto& [length, kl] : c.drift_kl_mean) {
      j["drift"].push_back({{"config", c.spec}, {"length", length}, {"n", 1}, {"kl_mean", kl}, {"kl_max", kl}});
    }
  }
  return j;
}

std::filesystem::path WriteResults(const std::filesystem::path& dir, const json& results) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "results.json") << results.dump(2) << "\n";
  return dir;
}

}  // namespace kvaudit::testing
