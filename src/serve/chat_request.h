// The body of POST /v1/chat/completions, parsed and checked before anything runs (pure: no model;
// fuzzed by tests/fuzz/chat_request_fuzz.cc). Fields follow OpenAI's chat completions API (API
// reference, "Chat → Create chat completion": messages, max_completion_tokens, logprobs: bool,
// top_logprobs) and vLLM's ChatCompletionRequest (vllm/entrypoints/openai/protocol.py: top_k,
// min_p, add_generation_prompt). The sampling fields are those of /v1/completions: the chat body
// is mapped onto a completions body and read by ParseCompletionRequest, so both routes take and
// refuse them alike.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api_error.h"
#include "serve/completion_request.h"

namespace kvaudit::serve {

// The most messages one request may hold (bounds the template's work before tokenization).
inline constexpr size_t kMaxChatMessages = 1024;

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;  // a string, or the text parts of a content array joined
};

struct ChatRequest {
  std::vector<ChatMessage> messages;  // at least one
  // Sampling, stop, max_tokens, stream as a completions request; prompt_text is empty (the server
  // renders the chat template into it). logprobs: top_logprobs when "logprobs": true, else unset.
  CompletionRequest completion;
  // max_tokens / max_completion_tokens given; without either a chat completion may use the rest
  // of the context (vLLM's default: max_model_len - prompt tokens; OpenAI's: unbounded).
  bool max_tokens_given = false;
};

// The request, or the 400 that answers it. Unknown fields are ignored (as vLLM does); tools,
// functions, response_format, n > 1 and the like are 400 unsupported_value.
std::optional<ChatRequest> ParseChatRequest(std::string_view body, ApiError* error);

}  // namespace kvaudit::serve
