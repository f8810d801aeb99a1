// Synthetic eval and probe results.json files for the gate's tests (unit and cli): the stable keys
// of docs/results-schema.md and docs/probes.md "results.json", with the values a test chooses.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace kvaudit::testing {

struct SyntheticBucket {
  int from = 0, to = 0;
  double kld_mean = 0, kld_p99 = 0, top1_agree = 1, ppl_ratio = 1;
  int64_t tokens = 100;
};

struct SyntheticEvalConfig {
  std::string spec;
  std::vector<SyntheticBucket> buckets;
};

struct SyntheticFamily {
  std::string family;
  int n = 0, cache_induced = 0, recovered = 0;
  double p_holm = 1;
  bool significant = false;
};

struct SyntheticProbeConfig {
  std::string spec;
  std::vector<SyntheticFamily> pooled;
  int variance_pairs = 0, variance_identical = 0;  // one variance[] row when pairs > 0
  std::vector<std::pair<int, double>> drift;        // drift[] rows: (length, kl_mean)
};

inline constexpr const char* kSyntheticModelHash = "0123456789abcdef";

nlohmann::json SyntheticEvalResults(const std::vector<SyntheticEvalConfig>& configs,
                                    const std::string& model_hash = kSyntheticModelHash);
nlohmann::json SyntheticProbeResults(const std::vector<SyntheticProbeConfig>& configs,
                                     const std::string& model_hash = kSyntheticModelHash);
// Writes dir/results.json (creating dir); returns dir.
std::filesystem::path WriteResults(const std::filesystem::path& dir, const nlohmann::json& results);

}  // namespace kvaudit::testing
