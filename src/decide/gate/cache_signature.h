// Which cache a deployed server runs, told from outside. No engine reports its KV cache type in
// a form every one shares (llama-server reports none: not in /props, /slots or /metrics; vLLM's
// /metrics carries vllm:cache_config_info{cache_dtype=...}), so the audit records each
// configuration's signature — the teacher-forced log-probabilities of a fixed token sequence
// (the first window's first kSignatureLength tokens, its last kSignaturePositions predicted)
// — and `gate --endpoint` asks the server for the same numbers: the deployment runs the
// configuration whose signature is nearest (mean |Δ logprob|). Quantized caches move these
// numbers by 1e-3 (q8_0) to 1e-1 (q4_0) on the bundled model; the same configuration on the same
// engine gives the same numbers (each position a fresh prefill: no prompt-cache reuse).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "endpoint/remote_backend.h"
#include "run/generation_backend.h"

namespace kvaudit {

inline constexpr size_t kSignatureLength = 257;    // tokens of the sequence (at most; a shorter window: all)
inline constexpr size_t kSignaturePositions = 32;  // the last positions predicted

struct CacheSignatures {
  std::vector<int32_t> ids;  // [n] the sequence
  size_t first = 0;          // logprobs[i] predicts ids[first + 1 + i]
  // By configuration name (the baseline's among them): [n - first - 1] each.
  std::map<std::string, std::vector<double>> logprobs;

  // The sequence of a window: its first kSignatureLength tokens, the last kSignaturePositions predicted.
  static CacheSignatures ForWindow(std::span<const int32_t> window);
  nlohmann::json ToJson() const;
  // BadInput naming `where` for a malformed record.
  static Expected<CacheSignatures> FromJson(const nlohmann::json& j, const std::string& where);
};

// The log-probabilities of ids[first + 1 ..] under an in-process cache (full logits).
std::vector<double> LocalSignature(GenerationBackend& local, std::span<const int32_t> ids, size_t first);
// The same through a server, each position a fresh prefix (RemoteBackend::PromptLogprobs, no reuse).
Expected<std::vector<double>> RemoteSignature(const RemoteBackend& remote, std::span<const int32_t> ids, size_t first);

struct SignatureMatch {
  std::string nearest;  // the recorded configuration nearest to the live numbers
  double nearest_distance = 0;
  std::optional<double> expected_distance;  // to the configuration expected, when recorded
  std::string runner_up;                    // the next nearest ("" when only one is recorded)
  double runner_up_distance = 0;
};

// Mean |a - b| over positions (a and b the same length).
double SignatureDistance(std::span<const double> a, std::span<const double> b);
// The recorded configuration nearest to `live` (ties: the first by name), and the distance to `expected`.
SignatureMatch MatchSignature(const CacheSignatures& recorded, std::span<const double> live,
                              const std::string& expected);

}  // namespace kvaudit
