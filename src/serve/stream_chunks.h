// Server-sent events of a streamed completion (pure), as OpenAI and vLLM send them (OpenAI API
// reference, "Streaming" and "The chat completion chunk object"; vLLM's CompletionStreamResponse
// and ChatCompletionStreamResponse): each event is "data: <json>\n\n", the stream ends with
// "data: [DONE]\n\n".
//   /v1/completions:      {id, object "text_completion", created, model,
//                          choices [{index 0, text, logprobs null, finish_reason}]}
//   /v1/chat/completions: {id, object "chat.completion.chunk", created, model,
//                          choices [{index 0, delta {role "assistant", content ""} first, then
//                                    {content}, logprobs null, finish_reason}]}
// finish_reason is null until the last text chunk. With stream_options.include_usage every chunk
// carries "usage": null and one more chunk, choices [] and the usage, comes before [DONE]. An error
// mid-stream (timeout, shutdown) is one event {"error": {...}} (OpenAI's error object), and then
// the stream closes without [DONE].
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "serve/completion_response.h"

namespace kvaudit::serve {

enum class StreamRoute { kCompletions, kChat };

inline constexpr const char* kSseDone = "data: [DONE]\n\n";

std::string SseEvent(const nlohmann::json& payload);

// A text chunk; finish_reason "" = null. first: the chat route's role delta goes with it.
nlohmann::json TextChunk(StreamRoute route, const ResponseIds& ids, const std::string& text,
                         const std::string& finish_reason, bool first, bool include_usage);
// The usage chunk (choices: []).
nlohmann::json UsageChunk(StreamRoute route, const ResponseIds& ids, size_t prompt_tokens, size_t completion_tokens);

}  // namespace kvaudit::serve
