// Synthetic eval and probe results.json files for the gate's tests (unit and cli): the stable keys
// of docs/results-schema.md and docs/probes.md "results.json", with the values a test chooses.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decide/gate/gate_inputs.h"

namespace kvaudit::testing {

struct SyntheticBucket {
  int from = 0, to = 0;
  double kld_mean = 0, kld_p99 = 0, top1_agree = 1, ppl_ratio = 1;
  int64_t tokens = 100;
  // The 95% intervals written; unset: a point at the value.
  std::optional<Interval> kld_ci = std::nullopt, kld_p99_ci = std::nullopt, top1_ci = std::nullopt,
                          ppl_ci = std::nullopt;
  // window_sums: the tokens spread evenly over this many windows, each at the bucket's values
  // (no spread between or within windows, so a pool's intervals are points, top-1's Wilson's).
  int windows = 4;
};

struct SyntheticEvalConfig {
  std::string spec;
  std::vector<SyntheticBucket> buckets;
};

inline constexpr const char* kSyntheticModelHash = "0123456789abcdef";

nlohmann::json SyntheticEvalResults(const std::vector<SyntheticEvalConfig>& configs,
                                    const std::string& model_hash = kSyntheticModelHash);
// Probe results hold what the gate reads back (decide/gate/gate_inputs.h): the pooled rows (a row
// with baseline_pass 0 has the baseline pass every instance but the recovered ones), one variance[]
// row with the summed pairs when variance_pairs > 0, a drift[] row per (length, kl_mean).
nlohmann::json SyntheticProbeResults(const std::vector<ProbeConfigResult>& configs,
                                     const std::string& model_hash = kSyntheticModelHash);
// Writes dir/results.json (creating dir); returns dir.
std::filesystem::path WriteResults(const std::filesystem::path& dir, const nlohmann::json& results);

}  // namespace kvaudit::testing
