// Records, aggregation and output of `kvaudit probe`: the per-instance outcomes under the
// baseline and every configuration, the attribution rows (schema: docs/probes.md "results.json"),
// the variance and drift summaries, and the terminal tables.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probe/attribution_table.h"

namespace kvaudit {

// results.json's schema_version; changes: docs/probes.md "results.json".
inline constexpr int kProbeSchemaVersion = 2;

// One checked instance (needle, exact, constraint, custom) under one cache.
struct ProbeRun {
  bool pass = false;
  std::string text;            // the generated continuation
  int first_wrong_token = -1;  // ProbeScore::first_wrong_token
  std::string detail;          // why it failed
};

struct ProbeRecord {
  std::string id, family, variant;
  int length = 0;              // the grid cell (custom: the prompt's token count)
  int depth = -1;              // needle and exact: percent; else -1
  std::string expected;        // what the check wants, in words
  std::vector<ProbeRun> runs;  // [1 + n_configs], baseline first
  // On a model with sliding-window layers (needle and exact probes): tokens from the fact's last
  // token to the prompt's last, and whether that is beyond the window, so that only the global
  // layers can read the fact; -1 / false otherwise (and absent from the JSON).
  int fact_distance = -1;
  bool beyond_window = false;
};

// Repeated-run variance: K seeded samples of one prompt under each cache (same seeds).
struct VarianceRecord {
  std::string id;
  int length = 0;
  std::vector<std::vector<std::vector<int32_t>>> samples;  // [1 + n_configs][K] generated ids
};

// Free-running drift: greedy generations from one prompt; KL of each configuration along the
// baseline's path (teacher-forced on the baseline's tokens).
struct DriftRecord {
  std::string id;
  int length = 0;
  std::vector<std::vector<int32_t>> outputs;  // [1 + n_configs] generated ids
  std::vector<double> kl_mean, kl_max;        // [n_configs] over the baseline's path
};

nlohmann::json ToJson(const ProbeRecord& r);
nlohmann::json ToJson(const VarianceRecord& r);
nlohmann::json ToJson(const DriftRecord& r);
// nullopt when the line does not have the shape (a damaged journal line).
std::optional<ProbeRecord> ProbeRecordFromJson(const nlohmann::json& j, size_t n_caches);
std::optional<VarianceRecord> VarianceRecordFromJson(const nlohmann::json& j, size_t n_caches);
std::optional<DriftRecord> DriftRecordFromJson(const nlohmann::json& j, size_t n_caches);

struct ProbeRunInfo {
  std::string model, baseline_spec, data;
  std::string model_hash;                   // hex, run/fingerprint.h IdentifyModel (as in the fingerprint)
  std::string model_hash_kind = "weights";  // or "config+tokenizer": an all-remote run loads no weights
  std::vector<std::string> specs;           // [n_configs] canonical
  std::vector<uint64_t> bytes_per_token;    // [n_configs]; 0 for an endpoint (null in results)
  // [n_configs]: null for an in-process configuration, else its endpoint (endpoint/remote_configs.h
  // RemoteConfig::Describe); baseline_endpoint likewise for the baseline.
  std::vector<nlohmann::json> endpoints;
  nlohmann::json baseline_endpoint;
  std::vector<std::string> notes;  // what the run left out and why
  uint64_t probe_seed = 0;         // the generated prompts (--probe-seed)
  uint64_t sampling_seed = 1;      // the variance samples (--seed)
  int instances = 0, resumed = 0, threads = 0;
  double wall_s = 0, peak_rss_mb = 0;
  std::string chat_format;  // "none", "chatml", ...
};

// One attribution row per family × variant × configuration × length (× depth for needles), its
// verdict Holm-corrected over the rows of its configuration.
std::vector<ProbeRow> AttributionRows(const std::vector<ProbeRecord>& records, const std::vector<std::string>& specs);

nlohmann::json ProbeResultsJson(const ProbeRunInfo& info, const std::vector<ProbeRecord>& probes,
                                const std::vector<VarianceRecord>& variance, const std::vector<DriftRecord>& drift);
std::string ProbeResultsTable(const ProbeRunInfo& info, const std::vector<ProbeRecord>& probes,
                              const std::vector<VarianceRecord>& variance, const std::vector<DriftRecord>& drift);

}  // namespace kvaudit
