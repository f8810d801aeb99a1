// Prompt formats for probes (docs/probes.md): base models get the prompt as plain completion text;
// models with a chat template get it wrapped as one user turn in the template's family, then the
// assistant's reply is primed with `assistant_prefix` (a needle prompt ends with `The value is "`).
// We do not run Jinja: the families below are recognised by their markers and rendered by hand,
// exactly as their templates render one user message with add_generation_prompt=true. Anything
// else is an error telling the user to name the family with --chat-template.
//
// BOS is not part of the rendered text: the Llama-3 and Mistral templates start with
// {{ bos_token }}, which the tokenizer's add_bos (tokenizer_config.json add_bos_token, GGUF
// tokenizer.ggml.add_bos_token) supplies when the prompt is encoded; ChatML models (Qwen) use none.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace kvaudit {

class GgufFile;

enum class ChatFormat {
  kNone,       // completion-style: the prompt as is
  kChatML,     // <|im_start|>user ... (Qwen, many fine-tunes)
  kLlama3,     // <|start_header_id|>user<|end_header_id|> ... (Llama 3.x)
  kMistral,    // [INST] msg [/INST] (Mistral-7B-Instruct v0.1/v0.2, Mixtral; also Llama-2-chat)
  kMistralV3,  // [INST] msg[/INST] (Mistral-7B-Instruct v0.3 and later Mistral templates)
};

// Family of a Jinja chat template by its markers: <|im_start|> → ChatML, <|start_header_id|> →
// Llama-3, [INST] → Mistral (kMistral when the template writes " [/INST]" with a space before it,
// else kMistralV3); empty or blank → kNone; anything else → BadInput with the --chat-template hint.
Expected<ChatFormat> DetectChatFormat(std::string_view jinja_template);

// The --chat-template flag: none | chatml | llama3 | mistral | mistral-v3.
Expected<ChatFormat> ParseChatFormatName(std::string_view name);
const char* ChatFormatName(ChatFormat format);

// The text the family's template renders for a single user turn (add_generation_prompt=true),
// followed by assistant_prefix. kNone returns user_message + assistant_prefix.
std::string ApplyChatTemplate(ChatFormat format, std::string_view user_message, std::string_view assistant_prefix);

// The chat template of a Hugging Face model directory: tokenizer_config.json "chat_template" (a
// string, or a list of {"name", "template"} from which "default" is taken), else the file
// chat_template.jinja (how newer transformers save it); "" when the model has none.
Expected<std::string> ReadHfChatTemplate(const std::string& model_dir);
// The same over tokenizer_config.json text already read; label names it in errors.
Expected<std::string> ChatTemplateFromTokenizerConfig(std::string_view config_json, const std::string& label);
// GGUF metadata tokenizer.chat_template; "" when absent, an error when it is not a string.
Expected<std::string> ReadGgufChatTemplate(const GgufFile& gguf);

// The --chat-template flag of probe and serve: "auto" reads the model's own template
// (tokenizer_config.json / chat_template.jinja beside HF weights, tokenizer.chat_template in a
// GGUF file) and detects its family; other values name the family.
Expected<ChatFormat> ResolveChatFormat(const std::string& model_path, const std::string& name);

}  // namespace kvaudit
