#include "serve/chat_prompt.h"

#include "base/trim.h"

namespace kvaudit::serve {
namespace {

// ChatML (Qwen2.5's template without its default system turn): per message
// '<|im_start|>' + role + '\n' + content + '<|im_end|>\n', then '<|im_start|>assistant\n'.
std::string ChatMl(const std::vector<ChatMessage>& ms) {
  std::string out;
  for (const ChatMessage& m : ms) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  return out + "<|im_start|>assistant\n";
}

// Meta-Llama-3-8B-Instruct: '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + content|trim
// + '<|eot_id|>' per message, then the assistant header (bos_token comes from the tokenizer).
std::string Llama3(const std::vector<ChatMessage>& ms) {
  std::string out;
  for (const ChatMessage& m : ms) {
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
    out += TrimSpace(m.content);
    out += "<|eot_id|>";
  }
  return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

// Mistral-7B-Instruct v0.1/v0.2 ('[INST] ' + content + ' [/INST]', assistant content + eos_token)
// and v0.3 (no space before [/INST]). eos_token is "</s>" in every Mistral vocabulary.
std::optional<std::string> Mistral(bool v3, const std::vector<ChatMessage>& ms, ApiError* error) {
  size_t first = 0;
  std::string system;
  if (ms[0].role == "system") system = ms[0].content, first = 1;
  std::string out;
  for (size_t i = first; i < ms.size(); ++i) {
    const bool user_turn = (i - first) % 2 == 0;
    if ((ms[i].role == "user") != user_turn || ms[i].role == "system") {
      *error = BadRequest("invalid_value", "messages",
                          "this model's chat template (Mistral) needs user and assistant turns alternating from a user "
                          "turn, one system message at most, first; hint: reorder the messages");
      return std::nullopt;
    }
    if (user_turn) {
      const std::string content = i == first && !system.empty() ? system + "\n\n" + ms[i].content : ms[i].content;
      out += "[INST] " + content + (v3 ? "[/INST]" : " [/INST]");
    } else {
      out += ms[i].content + "</s>";
    }
  }
  if (ms.size() == first || ms.back().role != "user") {
    *error = BadRequest(
        "invalid_value", "messages",
        "this model's chat template (Mistral) needs the last message to be the user's; hint: end with a user turn");
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<std::string> RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages, ApiError* error) {
  switch (format) {
    case ChatFormat::kNone:
      *error = BadRequest("unsupported_value", "messages",
                          "the model has no chat template; hint: start kvaudit serve with --chat-template "
                          "chatml|llama3|mistral|mistral-v3, or use /v1/completions");
      return std::nullopt;
    case ChatFormat::kChatML: return ChatMl(messages);
    case ChatFormat::kLlama3: return Llama3(messages);
    case ChatFormat::kMistral: return Mistral(false, messages, error);
    case ChatFormat::kMistralV3: return Mistral(true, messages, error);
  }
  return std::nullopt;
}

}  // namespace kvaudit::serve
