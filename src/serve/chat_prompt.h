// The prompt of a chat completion: the messages rendered in the model's chat-template family
// (tokenizer/chat_template.h: ChatML, Llama-3, Mistral), with the generation prompt appended
// (add_generation_prompt=true), as the family's Jinja template renders a conversation. Like
// ApplyChatTemplate, BOS is not part of the text (the tokenizer's add_bos supplies it) and no
// default system turn is invented. A single user message renders exactly as ApplyChatTemplate(f,
// content, "") (tests/unit/serve_chat_test.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "serve/api_error.h"
#include "serve/chat_request.h"

namespace kvaudit::serve {

// The text, or a 400: kNone (the model has no template: --chat-template names one), or a
// conversation the family cannot express (Mistral: user/assistant must alternate from a user turn
// and end with one; one system message, first, is put before the first user message's content
// with "\n\n", as Mistral's v0.3 template joins them).
std::optional<std::string> RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages, ApiError* error);

}  // namespace kvaudit::serve
