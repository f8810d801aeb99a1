#include "serve/stream_chunks.h"

#include "serve/chat_response.h"

namespace kvaudit::serve {
namespace {

using nlohmann::json;

json Envelope(StreamRoute route, const ResponseIds& ids) {
  return {{"id", ids.id},
          {"object", route == StreamRoute::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model}};
}

}  // namespace

std::string SseEvent(const nlohmann::json& payload) { return "data: " + DumpJson(payload) + "\n\n"; }

nlohmann::json TextChunk(StreamRoute route, const ResponseIds& ids, const std::string& text,
                         const std::string& finish_reason, bool first, bool include_usage) {
  json choice = {{"index", 0}};
  if (route == StreamRoute::kChat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (first || !text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  json chunk = Envelope(route, ids);
  chunk["choices"] = json::array({choice});
  if (include_usage) chunk["usage"] = nullptr;
  return chunk;
}

nlohmann::json UsageChunk(StreamRoute route, const ResponseIds& ids, size_t prompt_tokens, size_t completion_tokens) {
  json chunk = Envelope(route, ids);
  chunk["choices"] = json::array();
  chunk["usage"] = Usage(prompt_tokens, completion_tokens);
  return chunk;
}

}  // namespace kvaudit::serve
