#include "tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/trim.h"
#include "io/gguf.h"

namespace kvaudit {
namespace {

constexpr const char* kFlagHint = "hint: pass --chat-template none|chatml|llama3|mistral|mistral-v3";

// Jinja's `trim` filter (Python str.strip()) on ASCII whitespace, as the Llama-3 template applies
// to message content.
Expected<std::string> ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return BadInput(p.string() + ": cannot open file; hint: check the model directory");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Expected<ChatFormat> DetectChatFormat(std::string_view t) {
  if (TrimSpace(t).empty()) return ChatFormat::kNone;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatML;
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::kLlama3;
  if (t.find("[INST]") != std::string_view::npos) {
    // v0.1/v0.2 write '[INST] ' + content + ' [/INST]'; v0.3 writes "[INST] " + content + "[/INST]".
    return t.find(" [/INST]") != std::string_view::npos ? ChatFormat::kMistral : ChatFormat::kMistralV3;
  }
  std::string head(t.substr(0, 40));
  for (char& ch : head) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return BadInput("the model's chat template (\"" + head + (t.size() > 40 ? "..." : "") +
                  "\") is not one of the supported families (ChatML, Llama-3, Mistral); " + kFlagHint);
}

Expected<ChatFormat> ParseChatFormatName(std::string_view name) {
  if (name == "none") return ChatFormat::kNone;
  if (name == "chatml") return ChatFormat::kChatML;
  if (name == "llama3") return ChatFormat::kLlama3;
  if (name == "mistral") return ChatFormat::kMistral;
  if (name == "mistral-v3") return ChatFormat::kMistralV3;
  return BadInput("--chat-template \"" + std::string(name) + "\" is not a known format; " + kFlagHint);
}

const char* ChatFormatName(ChatFormat format) {
  switch (format) {
    case ChatFormat::kNone: return "none";
    case ChatFormat::kChatML: return "chatml";
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kMistral: return "mistral";
    case ChatFormat::kMistralV3: return "mistral-v3";
  }
  return "?";
}

std::string ApplyChatTemplate(ChatFormat format, std::string_view user_message, std::string_view assistant_prefix) {
  std::string out;
  switch (format) {
    case ChatFormat::kNone: out = user_message; break;
    case ChatFormat::kChatML:
      // Qwen2/2.5 templates add a default system turn when none is given ("You are a helpful
      // assistant." / "You are Qwen, ..."); we render the bare user turn of the ChatML format.
      out = "<|im_start|>user\n";
      out += user_message;
      out += "<|im_end|>\n<|im_start|>assistant\n";
      break;
    case ChatFormat::kLlama3:
      // Meta-Llama-3-8B-Instruct: '<|start_header_id|>' + role + '<|end_header_id|>\n\n' +
      // content | trim + '<|eot_id|>', then the generation prompt for the assistant.
      out = "<|start_header_id|>user<|end_header_id|>\n\n";
      out += TrimSpace(user_message);
      out += "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatFormat::kMistral:
      // Mistral-7B-Instruct-v0.1/v0.2 and Mixtral-8x7B-Instruct:
      // {{ '[INST] ' + message['content'] + ' [/INST]' }} (as quoted in llama.cpp's
      // tests/test-chat-template.cpp and vLLM's logged default template); no generation prompt.
      out = "[INST] ";
      out += user_message;
      out += " [/INST]";
      break;
    case ChatFormat::kMistralV3:
      // Mistral-7B-Instruct-v0.3: {{- "[INST] " + message["content"] + "[/INST]" }} (no space
      // before [/INST]; there [INST] and [/INST] are control tokens).
      out = "[INST] ";
      out += user_message;
      out += "[/INST]";
      break;
  }
  out += assistant_prefix;
  return out;
}

Expected<std::string> ChatTemplateFromTokenizerConfig(std::string_view config_json, const std::string& label) {
  const auto j = nlohmann::json::parse(config_json.begin(), config_json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return BadInput(label + ": not a valid JSON object; hint: fix tokenizer_config.json or pass --chat-template");
  }
  const auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", nlohmann::json()) == "default") {
        const auto t = entry.find("template");
        if (t != entry.end() && t->is_string()) return t->get<std::string>();
      }
    }
    return BadInput(label + ": \"chat_template\" is a list without a \"default\" template; " + kFlagHint);
  }
  return BadInput(label + ": \"chat_template\" is neither a string nor a list of {name, template}; " + kFlagHint);
}

Expected<std::string> ReadHfChatTemplate(const std::string& model_dir) {
  namespace fs = std::filesystem;
  const fs::path config = fs::path(model_dir) / "tokenizer_config.json";
  std::error_code ec;
  if (fs::exists(config, ec)) {
    KV_ASSIGN_OR_RETURN(std::string text, ReadFile(config));
    KV_ASSIGN_OR_RETURN(std::string tmpl, ChatTemplateFromTokenizerConfig(text, config.string()));
    if (!tmpl.empty()) return tmpl;
  }
  const fs::path jinja = fs::path(model_dir) / "chat_template.jinja";
  if (fs::exists(jinja, ec)) return ReadFile(jinja);
  return std::string();
}

Expected<std::string> ReadGgufChatTemplate(const GgufFile& gguf) {
  if (!gguf.Has("tokenizer.chat_template")) return std::string();
  return gguf.GetString("tokenizer.chat_template");
}

Expected<ChatFormat> ResolveChatFormat(const std::string& model_path, const std::string& name) {
  if (name != "auto") return ParseChatFormatName(name);
  std::string jinja;
  if (std::filesystem::is_directory(model_path)) {
    KV_ASSIGN_OR_RETURN(jinja, ReadHfChatTemplate(model_path));
  } else {
    KV_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Open(model_path));
    KV_ASSIGN_OR_RETURN(jinja, ReadGgufChatTemplate(gguf));
  }
  return DetectChatFormat(jinja);
}

}  // namespace kvaudit
