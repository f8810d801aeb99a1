// What must hold for every POST /v1/chat/completions body, whatever the bytes: shared by the fuzz
// target (tests/fuzz/chat_request_fuzz.cc) and the replay of its corpus in the ordinary suite
// (tests/unit/serve_request_corpus_test.cc). A refused body is a clean 400 (as for completions);
// an accepted one has 1..kMaxChatMessages messages of a served role, and its completion part keeps
// every bound of serve_request_invariants.h, with an empty prompt (the template fills it).
#pragma once

#include <string>

#include "serve/chat_request.h"
#include "serve_request_invariants.h"

namespace kvaudit::fuzz {

inline std::string ChatRequestViolation(const std::optional<serve::ChatRequest>& r, const serve::ApiError& e) {
  if (!r) return ServeRequestViolation(std::nullopt, e);
  if (r->messages.empty() || r->messages.size() > serve::kMaxChatMessages)
    return "message count out of bounds accepted";
  for (const serve::ChatMessage& m : r->messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") return "a role not served accepted: " + m.role;
  }
  if (!r->completion.prompt_text.empty() || r->completion.prompt_is_ids) return "a chat request came with a prompt";
  if (r->completion.echo || r->completion.prompt_logprobs) return "echo or prompt_logprobs accepted on chat";
  return ServeRequestViolation(r->completion, e);
}

}  // namespace kvaudit::fuzz
