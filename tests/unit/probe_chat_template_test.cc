// Chat formats for probe prompts (docs/probes.md): detection on real template snippets, exact
// rendering, reading templates from tokenizer_config.json and GGUF, and a Llama-3 prompt tokenized
// with the real Llama-3 vocabulary (its header markers must be single special tokens).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "io/gguf.h"
#include "io_builders.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

// Abridged from the published tokenizer_config.json files.
constexpr const char* kQwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr const char* kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
constexpr const char* kMistralV02 =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
    "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";
constexpr const char* kMistralV03 =
    "{{- bos_token }}\n{%- for message in loop_messages %}\n    {%- if message[\"role\"] == \"user\" %}\n"
    "        {%- if loop.last and system_message is defined %}\n"
    "            {{- \"[INST] \" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- else %}\n            {{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}\n"
    "        {%- endif %}\n    {%- elif message[\"role\"] == \"assistant\" %}\n"
    "        {{- \" \" + message[\"content\"]|trim + eos_token}}\n    {%- endif %}\n{%- endfor %}\n";
constexpr const char* kGemma =
    "{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + "
    "'<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}";

TEST(ChatTemplateTest, DetectsFamiliesByMarkers) {
  EXPECT_EQ(*DetectChatFormat(kQwen2), ChatFormat::kChatML);
  EXPECT_EQ(*DetectChatFormat(kLlama3), ChatFormat::kLlama3);
  EXPECT_EQ(*DetectChatFormat(kMistralV02), ChatFormat::kMistral);
  EXPECT_EQ(*DetectChatFormat(kMistralV03), ChatFormat::kMistralV3);
  EXPECT_EQ(*DetectChatFormat(""), ChatFormat::kNone);
  EXPECT_EQ(*DetectChatFormat(" \n"), ChatFormat::kNone);
  auto gemma = DetectChatFormat(kGemma);
  ASSERT_FALSE(gemma.ok());
  EXPECT_EQ(gemma.error().code, ErrorCode::kBadInput);
  const std::string& m = gemma.error().message;
  EXPECT_NE(m.find("not one of the supported families"), std::string::npos) << m;
  EXPECT_NE(m.find("--chat-template none|chatml|llama3|mistral"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(ChatTemplateTest, RendersOneUserTurnThenTheAssistantPrefix) {
  const std::string msg = "Recall the value of KEY.";
  const std::string pre = "The value is \"";
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kNone, msg, pre), "Recall the value of KEY.The value is \"");
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kChatML, msg, pre),
            "<|im_start|>user\nRecall the value of KEY.<|im_end|>\n<|im_start|>assistant\nThe value is \"");
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kLlama3, msg, pre),
            "<|start_header_id|>user<|end_header_id|>\n\nRecall the value of KEY.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nThe value is \"");
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kMistral, msg, pre),
            "[INST] Recall the value of KEY. [/INST]The value is \"");
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kMistralV3, msg, pre),
            "[INST] Recall the value of KEY.[/INST]The value is \"");
  // Llama-3's template trims the content (Jinja `trim`); the others keep it as is.
  EXPECT_EQ(
      ApplyChatTemplate(ChatFormat::kLlama3, "\n  hi \n", ""),
      "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kChatML, " hi\n", ""),
            "<|im_start|>user\n hi\n<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ApplyChatTemplate(ChatFormat::kMistral, "", ""), "[INST]  [/INST]");
}

TEST(ChatTemplateTest, FlagNamesRoundTripAndBadNamesAreRejected) {
  for (ChatFormat f :
       {ChatFormat::kNone, ChatFormat::kChatML, ChatFormat::kLlama3, ChatFormat::kMistral, ChatFormat::kMistralV3}) {
    auto parsed = ParseChatFormatName(ChatFormatName(f));
    ASSERT_TRUE(parsed.ok()) << ChatFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  for (const char* bad : {"", "ChatML", "llama-3", "mistral3", "gemma", "auto"}) {
    auto r = ParseChatFormatName(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
    EXPECT_NE(r.error().message.find("hint: pass --chat-template none|chatml|llama3|mistral"), std::string::npos);
  }
}

TEST(ChatTemplateTest, ReadsTokenizerConfigStringOrNamedList) {
  nlohmann::json cfg = {{"bos_token", "<s>"}, {"chat_template", kLlama3}};
  EXPECT_EQ(*ChatTemplateFromTokenizerConfig(cfg.dump(), "cfg"), kLlama3);
  cfg["chat_template"] = nlohmann::json::array(
      {{{"name", "tool_use"}, {"template", "{{ tools }}"}}, {{"name", "default"}, {"template", kQwen2}}});
  EXPECT_EQ(*ChatTemplateFromTokenizerConfig(cfg.dump(), "cfg"), kQwen2);
  cfg["chat_template"] = nlohmann::json::array({{{"name", "rag"}, {"template", "x"}}});
  EXPECT_FALSE(ChatTemplateFromTokenizerConfig(cfg.dump(), "cfg").ok());
  cfg["chat_template"] = 3;
  EXPECT_FALSE(ChatTemplateFromTokenizerConfig(cfg.dump(), "cfg").ok());
  cfg.erase("chat_template");
  EXPECT_EQ(*ChatTemplateFromTokenizerConfig(cfg.dump(), "cfg"), "");
  EXPECT_FALSE(ChatTemplateFromTokenizerConfig("{not json", "cfg").ok());

  // The bundled model is a base model: no template, so completion-style prompts.
  auto bundled = ReadHfChatTemplate(testing::BundledModelDir().string());
  ASSERT_TRUE(bundled.ok()) << bundled.error().message;
  EXPECT_EQ(*bundled, "");
  EXPECT_EQ(*DetectChatFormat(*bundled), ChatFormat::kNone);

  // chat_template.jinja is used when tokenizer_config.json has no template.
  const auto dir = testing::MakeTempDir("chat-template");
  testing::WriteText(dir / "tokenizer_config.json", "{\"add_bos_token\": false}");
  testing::WriteText(dir / "chat_template.jinja", kQwen2);
  EXPECT_EQ(*ReadHfChatTemplate(dir.string()), kQwen2);
  std::filesystem::remove_all(dir);
}

TEST(ChatTemplateTest, ReadsGgufMetadata) {
  testing::GgufBuilder with;
  with.Str("general.architecture", "llama").Str("tokenizer.chat_template", kMistralV02);
  const auto bytes = with.Build();
  auto g = GgufFile::Parse(bytes.data(), bytes.size(), "mem.gguf");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(*ReadGgufChatTemplate(*g), kMistralV02);

  testing::GgufBuilder without;
  without.Str("general.architecture", "llama");
  const auto bytes2 = without.Build();
  auto g2 = GgufFile::Parse(bytes2.data(), bytes2.size(), "mem.gguf");
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(*ReadGgufChatTemplate(*g2), "");

  testing::GgufBuilder wrong;
  wrong.U32("tokenizer.chat_template", 7);
  const auto bytes3 = wrong.Build();
  auto g3 = GgufFile::Parse(bytes3.data(), bytes3.size(), "mem.gguf");
  ASSERT_TRUE(g3.ok());
  EXPECT_FALSE(ReadGgufChatTemplate(*g3).ok());
}

TEST(ChatTemplateTest, Llama3PromptTokenizesHeadersAsSpecialTokens) {
  auto gguf = GgufFile::Open(testing::Fixture("tokenizers/ggml-vocab-llama-bpe.gguf").string());
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  auto tok = Tokenizer::FromGguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const Tokenizer& t = **tok;
  const std::string prompt = ApplyChatTemplate(ChatFormat::kLlama3, "Hi", "The value is \"");
  const std::vector<int32_t> ids = t.Encode(prompt, /*add_bos=*/true);
  // Llama-3 ids: <|begin_of_text|> 128000, <|start_header_id|> 128006, <|end_header_id|> 128007,
  // <|eot_id|> 128009.
  ASSERT_GE(ids.size(), 12u);
  EXPECT_EQ(ids[0], 128000);
  EXPECT_EQ(t.bos_id(), 128000);
  EXPECT_EQ(ids[1], 128006);
  EXPECT_EQ(t.TokenString(ids[1]), "<|start_header_id|>");
  EXPECT_EQ(t.Decode(std::span(ids).subspan(2, 1)), "user");
  EXPECT_EQ(ids[3], 128007);
  int headers = 0, eot = 0;
  for (int32_t id : ids) {
    headers += id == 128006;
    eot += id == 128009;
  }
  EXPECT_EQ(headers, 2);
  EXPECT_EQ(eot, 1);
  EXPECT_EQ(t.Decode(ids, /*render_special=*/true), "<|begin_of_text|>" + prompt);
  // Without special-token parsing the marker would be split into ordinary pieces.
  EXPECT_GT(t.Encode("<|start_header_id|>", false, /*parse_special=*/false).size(), 1u);
}

}  // namespace
}  // namespace kvaudit
