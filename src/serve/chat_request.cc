#include "serve/chat_request.h"

#include <nlohmann/json.hpp>

#include "base/json_text.h"

namespace kvaudit::serve {
namespace {

using nlohmann::json;

// OpenAI's content: a string, or an array of parts of which only {"type": "text", "text"} are
// text; their texts are joined (vLLM joins text parts with "\n" for string-content templates).
bool ReadContent(const json& m, std::string* out, ApiError* error) {
  const json* c = RequestField(m, "content");
  if (!c) return *error = BadRequest("missing_field", "messages", "every message needs a 'content'"), false;
  if (c->is_string()) return *out = c->get<std::string>(), true;
  if (!c->is_array())
    return *error = BadRequest("invalid_type", "messages", "'content' must be a string or an array of text parts"),
           false;
  for (const json& part : *c) {
    const json* type = part.is_object() ? RequestField(part, "type") : nullptr;
    const json* text = part.is_object() ? RequestField(part, "text") : nullptr;
    if (!type || *type != "text" || !text || !text->is_string()) {
      return *error = BadRequest(
                 "unsupported_value", "messages",
                 "only text content parts ({\"type\": \"text\", \"text\": ...}) are served; hint: send text"),
             false;
    }
    if (!out->empty()) *out += "\n";
    *out += text->get<std::string>();
  }
  return true;
}

bool ReadMessages(const json& body, std::vector<ChatMessage>* out, ApiError* error) {
  const json* ms = RequestField(body, "messages");
  if (!ms) return *error = BadRequest("missing_field", "messages", "'messages' is required"), false;
  if (!ms->is_array())
    return *error = BadRequest("invalid_type", "messages", "'messages' must be an array of messages"), false;
  if (ms->empty() || ms->size() > kMaxChatMessages) {
    return *error = BadRequest("invalid_value", "messages",
                               "'messages' must hold 1 to " + std::to_string(kMaxChatMessages) + " messages"),
           false;
  }
  for (const json& m : *ms) {
    if (!m.is_object()) return *error = BadRequest("invalid_type", "messages", "each message must be an object"), false;
    const json* role = RequestField(m, "role");
    if (!role || !role->is_string())
      return *error = BadRequest("missing_field", "messages", "every message needs a string 'role'"), false;
    ChatMessage msg{role->get<std::string>(), ""};
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant") {
      return *error = BadRequest("unsupported_value", "messages",
                                 "role '" + msg.role + "' is not served; hint: use system, user or assistant"),
             false;
    }
    if (RequestField(m, "tool_calls"))
      return *error = BadRequest("unsupported_value", "messages", "tool calls are not built; hint: omit them"), false;
    if (!ReadContent(m, &msg.content, error)) return false;
    out->push_back(std::move(msg));
  }
  return true;
}

// Chat-only options this server does not build: a 400 rather than a silently different answer.
bool RefuseUnbuiltChatOptions(const json& body, ApiError* error) {
  for (const char* name : {"tools", "tool_choice", "functions", "function_call", "response_format", "prompt_logprobs",
                           "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs"}) {
    if (RequestField(body, name)) {
      return *error = BadRequest("unsupported_value", name, std::string("'") + name + "' is not built; hint: omit it"),
             false;
    }
  }
  for (const auto& [name, neutral] : {std::pair{"add_generation_prompt", true},
                                      std::pair{"continue_final_message", false}, std::pair{"echo", false}}) {
    const json* v = RequestField(body, name);
    if (v && *v != neutral) {
      return *error = BadRequest("unsupported_value", name,
                                 std::string("'") + name + "' other than " + (neutral ? "true" : "false") +
                                     " is not built; hint: omit it"),
             false;
    }
  }
  return true;
}

// OpenAI's logprobs (bool) + top_logprobs (0..20) as the completions route's logprobs count.
bool MapLogprobs(const json& body, json* mapped, ApiError* error) {
  const json* lp = RequestField(body, "logprobs");
  const json* top = RequestField(body, "top_logprobs");
  if (lp && !lp->is_boolean())
    return *error = BadRequest("invalid_type", "logprobs", "'logprobs' must be true or false"), false;
  const bool want = lp && lp->get<bool>();
  if (top) {
    if (!top->is_number_integer() || top->get<int64_t>() < 0 || top->get<int64_t>() > kMaxLogprobs) {
      return *error = BadRequest("invalid_value", "top_logprobs", "'top_logprobs' must be an integer in [0, 20]"),
             false;
    }
    if (!want) {
      return *error = BadRequest("invalid_value", "top_logprobs",
                                 "'top_logprobs' needs 'logprobs': true; hint: set logprobs"),
             false;
    }
  }
  if (want) (*mapped)["logprobs"] = top ? top->get<int64_t>() : 0;
  return true;
}

}  // namespace

std::optional<ChatRequest> ParseChatRequest(std::string_view body, ApiError* error) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return *error = BadRequest("invalid_json", "", "the body is not valid JSON"), std::nullopt;
  if (!j.is_object()) return *error = BadRequest("invalid_type", "", "the body must be a JSON object"), std::nullopt;
  ChatRequest r;
  if (!ReadMessages(j, &r.messages, error) || !RefuseUnbuiltChatOptions(j, error)) return std::nullopt;
  // The completions body with the same sampling fields; max_completion_tokens (OpenAI's newer name)
  // wins over the deprecated max_tokens, as in vLLM.
  json mapped = {{"prompt", ""}};
  for (const char* name :
       {"model", "user", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "n", "best_of",
        "presence_penalty", "frequency_penalty", "logit_bias", "stream", "stream_options"}) {
    if (const json* v = RequestField(j, name)) mapped[name] = *v;
  }
  if (const json* v = RequestField(j, "max_completion_tokens")) {
    if (!v->is_number_integer())
      return *error = BadRequest("invalid_type", "max_completion_tokens", "'max_completion_tokens' must be an integer"),
             std::nullopt;
    mapped["max_tokens"] = *v;
  }
  if (!MapLogprobs(j, &mapped, error)) return std::nullopt;
  r.max_tokens_given = mapped.contains("max_tokens");
  const std::string text = JsonText(mapped);
  std::optional<CompletionRequest> c = ParseCompletionRequest(text, error);
  if (!c) return std::nullopt;
  r.completion = std::move(*c);
  return r;
}

}  // namespace kvaudit::serve
