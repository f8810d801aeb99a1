#include "decide/gate/cache_signature.h"

#include <algorithm>
#include <cmath>

#include "run/log_softmax.h"

namespace kvaudit {

using nlohmann::json;

CacheSignatures CacheSignatures::ForWindow(std::span<const int32_t> window) {
  CacheSignatures f;
  const size_t n = std::min(window.size(), kSignatureLength);
  f.ids.assign(window.begin(), window.begin() + static_cast<ptrdiff_t>(n));
  f.first = n > kSignaturePositions + 1 ? n - kSignaturePositions - 1 : 0;
  return f;
}

json CacheSignatures::ToJson() const {
  json configs = json::object();
  for (const auto& [name, lp] : logprobs) configs[name] = lp;
  return {{"what", "teacher-forced log-probabilities of ids[first + 1 ..], each position a fresh prefill"},
          {"ids", ids},
          {"first", first},
          {"logprobs", configs}};
}

Expected<CacheSignatures> CacheSignatures::FromJson(const json& j, const std::string& where) {
  const auto bad = [&](const std::string& what) {
    return BadInput(where + ": signature " + what + "; hint: rerun the audit with this kvaudit");
  };
  if (!j.is_object() || !j.contains("ids") || !j["ids"].is_array() || !j.contains("first") ||
      !j["first"].is_number_unsigned() || !j.contains("logprobs") || !j["logprobs"].is_object())
    return bad("missing or malformed (ids, first, logprobs)");
  CacheSignatures f;
  for (const json& id : j["ids"]) {
    if (!id.is_number_integer()) return bad("ids holds a non-integer");
    f.ids.push_back(id.get<int32_t>());
  }
  f.first = j["first"].get<size_t>();
  if (f.ids.size() < 2 || f.first + 1 >= f.ids.size()) return bad("first is outside ids");
  for (const auto& [name, lp] : j["logprobs"].items()) {
    if (!lp.is_array() || lp.size() != f.ids.size() - f.first - 1) return bad("of " + name + " has the wrong length");
    for (const json& v : lp) {
      if (!v.is_number()) return bad("of " + name + " holds a non-number");
      f.logprobs[name].push_back(v.get<double>());
    }
  }
  return f;
}

std::vector<double> LocalSignature(GenerationBackend& local, std::span<const int32_t> ids, size_t first) {
  const std::span<const int32_t> prompt = ids.first(first + 1), continuation = ids.subspan(first + 1);
  const std::vector<float> logits = local.ForcedLogits(prompt, continuation);  // [continuation, vocab]
  const size_t vocab = logits.size() / continuation.size();
  std::vector<double> out;  // [continuation]
  for (size_t i = 0; i < continuation.size(); ++i) {
    const std::span<const float> row(logits.data() + i * vocab, vocab);
    out.push_back(-TokenNll(row, LogSumExp(row), continuation[i]));
  }
  return out;
}

Expected<std::vector<double>> RemoteSignature(const RemoteBackend& remote, std::span<const int32_t> ids, size_t first) {
  KV_ASSIGN_OR_RETURN(const std::vector<PromptPositionLogprobs> rows,
                      remote.PromptLogprobs(ids, 1, first, /*reuse_prefix=*/false));  // [ids - 1]
  std::vector<double> out;
  for (size_t i = first; i < rows.size(); ++i) out.push_back(rows[i].logprob);
  return out;
}

double SignatureDistance(std::span<const double> a, std::span<const double> b) {
  KV_CHECK(a.size() == b.size() && !a.empty());
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::fabs(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

SignatureMatch MatchSignature(const CacheSignatures& recorded, std::span<const double> live,
                              const std::string& expected) {
  std::vector<std::pair<double, std::string>> by_distance;  // [recorded]
  for (const auto& [name, lp] : recorded.logprobs) by_distance.emplace_back(SignatureDistance(lp, live), name);
  std::stable_sort(by_distance.begin(), by_distance.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  SignatureMatch m;
  KV_CHECK(!by_distance.empty());
  m.nearest = by_distance[0].second, m.nearest_distance = by_distance[0].first;
  if (by_distance.size() > 1) m.runner_up = by_distance[1].second, m.runner_up_distance = by_distance[1].first;
  for (const auto& [d, name] : by_distance) {
    if (name == expected) m.expected_distance = d;
  }
  return m;
}

}  // namespace kvaudit
