// What both ways of reading a server's logprobs share (endpoint/remote_scoring.cc for vLLM's
// prompt_logprobs, endpoint/remote_prefix_scoring.cc for llama-server's completion_probabilities):
// a numeric field, and the top list in kvaudit's order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

namespace kvaudit {

// entry[key] when entry is an object holding a number there.
inline std::optional<double> LogprobField(const nlohmann::json& entry, const char* key) {
  if (!entry.is_object() || !entry.contains(key) || !entry[key].is_number()) return std::nullopt;
  return entry[key].get<double>();
}

// The top list most likely first, ties to the lower id (Argmax's order), cut to k.
inline void SortTopK(std::vector<std::pair<int32_t, double>>& top, int k) {
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  });
  if (top.size() > static_cast<size_t>(k)) top.resize(static_cast<size_t>(k));
}

}  // namespace kvaudit
