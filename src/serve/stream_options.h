// `stream` and `stream_options` of POST /v1/completions and /v1/chat/completions: whether the
// answer is server-sent events (OpenAI API reference, "Create completion" / "Create chat
// completion": stream, stream_options.include_usage; vLLM's StreamOptions in
// vllm/entrypoints/openai/protocol.py). Pure: the request parsers call it.
#pragma once

#include <nlohmann/json.hpp>

#include "serve/api_error.h"

namespace kvaudit::serve {

struct StreamOptions {
  bool stream = false;         // answer as text/event-stream chunks, then "data: [DONE]"
  bool include_usage = false;  // stream_options.include_usage: a usage chunk (choices: []) before [DONE]
};

// Reads body's stream and stream_options (null = not given). stream_options without stream is a
// 400, as vLLM's validator has it. Streaming with logprobs, echo or prompt_logprobs is refused
// (unsupported_value: not built yet) so a client never gets a stream silently missing them.
bool ReadStreamOptions(const nlohmann::json& body, StreamOptions* out, ApiError* error);

}  // namespace kvaudit::serve
