// What `kvaudit gate` judges (docs/decision.md "Gate"): the eval and probe results.json files in
// the --results directories, read by their stable keys (docs/results-schema.md, docs/probes.md
// "results.json"), each checked for its kind and schema_version, and all of them for one model.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/acceptance/policy.h"
#include "eval/bootstrap.h"
#include "eval/fidelity_interval.h"

namespace kvaudit {

// The schema_version of eval's and probe's results.json this gate reads.
inline constexpr int kGateSchemaVersion = 2;

struct EvalBucketRow {
  int from = 0, to = 0;  // inclusive context lengths
  int measured_to = 0;   // the longest context with data in it (<= to); `to` in files without the key
  int64_t tokens = 0;
  int windows = 0;  // windows holding its tokens (0: a file without the key)
  std::array<std::optional<double>, kNumFidelityMetrics> value;  // indexed by FidelityMetric; null: absent
  std::array<std::optional<Interval>, kNumFidelityMetrics> ci;   // the 95% interval of each value
  std::optional<WindowTotals> totals;                            // window_sums: for the intervals of a pool of buckets
};

struct EvalConfigResult {
  std::string spec;                    // canonical
  std::vector<EvalBucketRow> buckets;  // ascending
  bool kld_lower_bound = false;        // kld_estimate.kind "lower_bound_from_top_k": through an endpoint
};

struct EvalInput {
  std::string path, model_hash, baseline;   // model_hash "" in files written before it was added
  std::string model_hash_kind = "weights";  // "config+tokenizer": an all-remote run (no weights loaded)
  int bootstrap_replicates = 1000;          // settings: how eval drew its intervals, for pooled ones
  uint64_t bootstrap_seed = 1;
  std::vector<EvalConfigResult> configs;
};

// One pooled McNemar row of a checked family (probe results.json pooled[]).
struct PooledFamilyRow {
  std::string family;
  int n = 0, cache_induced = 0, recovered = 0;
  double p_holm = 1;
  bool significant = false;
  int baseline_pass = 0;  // instances the baseline passed (both passed + cache-induced failures)
};

// One custom probe under one configuration (probe results.json custom_probes[]).
struct CustomProbeOutcome {
  std::string id;  // the probe's id in the --custom file
  int tokens = 0;  // its prompt's token length
  bool baseline_pass = false, pass = false;
};

struct ProbeConfigResult {
  std::string spec;
  std::vector<PooledFamilyRow> pooled;
  int variance_rows = 0, variance_pairs = 0, variance_identical = 0;  // summed over variance[] lengths
  std::vector<std::pair<int, double>> drift_kl_mean;                  // drift[]: (length, kl_mean)
  bool endpoint = false;  // probed through a server (configs[].endpoint): spec is the endpoint's name
  std::vector<CustomProbeOutcome> custom = {};  // in the file's order
};

struct ProbeInput {
  std::string path, model_hash, baseline;
  std::string model_hash_kind = "weights";  // as EvalInput's
  double alpha = 0.05;
  std::vector<ProbeConfigResult> configs;
};

struct GateInputs {
  std::vector<EvalInput> evals;
  std::vector<ProbeInput> probes;
};

// Reads DIR/results.json, or for an audit directory (no eval or probe results.json at the top)
// DIR/eval/results.json and DIR/probe/results.json. Any file that is not an eval or probe result
// of schema_version 2, or lacks a stable key, is BadInput naming the file.
Expected<GateInputs> LoadGateInputs(const std::vector<std::string>& dirs);

// --model's identity in each kind of model_hash (run/fingerprint.h IdentifyModel): "weights"
// (HashModel) and "config+tokenizer" (HashModelConfigTokenizer); "" where not computed.
struct ModelHashes {
  std::string weights, config_tokenizer;
  bool empty() const { return weights.empty() && config_tokenizer.empty(); }
  const std::string& Of(const std::string& kind) const { return kind == "weights" ? weights : config_tokenizer; }
};

// All results must come from one model (docs/decision.md "Gate"). Files of one model_hash_kind
// must carry the same model_hash. With --model (`model`, named `model_path` in messages) every
// file is compared with the model's hash of the file's own kind, so an all-remote probe
// (config+tokenizer) and an in-process eval (weights) are gated together like with like; without
// it, files of different kinds cannot be compared and are refused in one line.
Status CheckOneModel(const GateInputs& inputs, const ModelHashes& model, const std::string& model_path);

// The hashes of the model at path in the kinds `inputs` carry: the weights are loaded only when
// some file's model_hash is of kind "weights".
Expected<ModelHashes> ModelHashesOf(const std::string& model_path, const GateInputs& inputs);

}  // namespace kvaudit
