// The JSON answer of POST /v1/chat/completions (pure): OpenAI's chat completion object (API
// reference, "The chat completion object": id "chatcmpl-...", object "chat.completion", created,
// model, choices[{index, message {role "assistant", content}, logprobs {content: [{token, logprob,
// bytes, top_logprobs: [{token, logprob, bytes}]}]} | null, finish_reason}], usage), as vLLM's
// ChatCompletionResponse returns it.
#pragma once

#include <nlohmann/json.hpp>

#include "serve/completion.h"
#include "serve/completion_response.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::serve {

// request: the chat request's completion part (its logprobs count).
nlohmann::json ChatCompletionResponse(const CompletionRequest& request, const CompletionOutput& output,
                                      const Tokenizer& tokenizer, const ResponseIds& ids);

// OpenAI's usage object.
nlohmann::json Usage(size_t prompt_tokens, size_t completion_tokens);

}  // namespace kvaudit::serve
