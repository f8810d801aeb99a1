// Writers for `kvaudit eval` results: DIR/results.json (schema: docs/results-schema.md, whose
// stable keys tools and CI read) and the terminal table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/attention_stats.h"
#include "eval/fidelity_stats.h"

namespace kvaudit {

// results.json's schema_version; changes: docs/results-schema.md "Changes".
inline constexpr int kEvalSchemaVersion = 2;

struct EvalRunInfo {
  std::string model, data, baseline_spec;
  std::string model_hash;                   // hex, run/fingerprint.h IdentifyModel: the same in the resume fingerprint
  std::string model_hash_kind = "weights";  // or "config+tokenizer": an all-remote run loads no weights
  std::string model_architecture;           // ArchName: llama, mistral, qwen2, qwen3
  int n_layers = 0, n_kv_heads = 0, head_dim = 0;  // the shape of the attention diagnosis
  // [n_layers] each layer's sliding window (0 = global); empty when no layer slides. Written to
  // results.json only when non-empty, so other models' results keep their bytes.
  std::vector<int> layer_windows;
  uint64_t baseline_bytes_per_token = 0;
  int ctx = 0, score_from = 0;
  int ubatch = 0;  // --ubatch; 0 = the default (512, or less for many configurations)
  bool per_doc = false;
  int n_windows = 0, windows_resumed = 0;
  int first_window = 0;        // the data's window the selection starts at (--first-window)
  int attn_samples = 0;        // sampled query positions per window for the attention diagnosis (0: off)
  std::string tokens_hash;     // hex, of the window tokens
  AggregateOptions aggregate;  // buckets, threshold, bootstrap settings (class tables unused here)
  // Endpoints (docs/endpoints.md): the baseline's when it is remote (else null), the top-k asked of
  // every server, and what the run left out and why.
  nlohmann::json baseline_endpoint;
  int top_logprobs = 0;  // 0: no endpoint
  std::vector<std::string> notes;
  // The run block: the only part of results.json that differs between a fresh and a resumed run.
  int threads = 0;
  double wall_s = 0, peak_rss_mb = 0;
};

struct ConfigResult {
  std::string spec;              // canonical
  uint64_t bytes_per_token = 0;  // 0 for an endpoint (null in results: unknown)
  nlohmann::json endpoint;       // null in-process; an endpoint's RemoteConfig::Describe()
  ConfigSummary summary;
  std::vector<AttnSummary> attention;  // every (layer, KV head), layer-major; empty when off
};

nlohmann::json ResultsJson(const EvalRunInfo& info, const std::vector<ConfigResult>& configs);
std::string ResultsTable(const EvalRunInfo& info, const std::vector<ConfigResult>& configs);

}  // namespace kvaudit
