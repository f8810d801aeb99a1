// What must hold for every POST /v1/completions body, whatever the bytes: shared by the fuzz
// target (tests/fuzz/serve_request_fuzz.cc) and the replay of its corpus in the ordinary suite
// (tests/unit/serve_request_corpus_test.cc). A refused body gives a 400 invalid_request_error
// with a code and a one-line message, whose JSON dumps without throwing; an accepted one is within
// every bound the server relies on (docs/serve.md).
#pragma once

#include <string>

#include "serve/completion_request.h"

namespace kvaudit::fuzz {

// "" when every invariant holds for ParseCompletionRequest's result, else the first that broke.
inline std::string ServeRequestViolation(const std::optional<serve::CompletionRequest>& r, const serve::ApiError& e) {
  if (!r) {
    if (e.status != 400 || e.type != "invalid_request_error") return "refused, but not a 400 invalid_request_error";
    if (e.code.empty() || e.message.empty()) return "refused without a code or a message";
    if (e.message.find('\n') != std::string::npos) return "the message is not one line: " + e.message;
    (void)e.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return "";
  }
  const SamplingParams& s = r->sampling;
  if (r->max_tokens < 0) return "negative max_tokens accepted";
  if (!(s.temperature >= 0 && s.temperature <= 2) || !(s.top_p > 0 && s.top_p <= 1) ||
      !(s.min_p >= 0 && s.min_p <= 1) || s.top_k < 0) {
    return "a sampling parameter out of range accepted";
  }
  if (r->stop.size() > static_cast<size_t>(serve::kMaxStops)) return "too many stop strings accepted";
  for (const std::string& stop : r->stop) {
    if (stop.empty() || stop.size() > serve::kMaxStopBytes) return "an empty or overlong stop string accepted";
  }
  for (const auto* k : {&r->logprobs, &r->prompt_logprobs}) {
    if (k->has_value() && (**k < 0 || **k > serve::kMaxLogprobs)) return "logprobs out of range accepted";
  }
  if (r->prompt_is_ids && r->prompt_ids.empty()) return "an empty id prompt accepted";
  for (int32_t id : r->prompt_ids) {
    if (id < 0) return "a negative token id accepted";
  }
  if (!r->prompt_is_ids && !r->prompt_ids.empty()) return "text prompt with ids";
  return "";
}

}  // namespace kvaudit::fuzz
