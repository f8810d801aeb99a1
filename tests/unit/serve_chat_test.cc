// POST /v1/chat/completions' parser and prompt (src/serve/chat_request.h, chat_prompt.h): the chat
// body's fields mapped onto the completions route's, the 400s, and each template family's
// rendering of a conversation (docs/serve.md "POST /v1/chat/completions").
#include <gtest/gtest.h>

#include <string>

#include "serve/chat_prompt.h"
#include "serve/chat_request.h"

namespace kvaudit::serve {
namespace {

ChatRequest Parse(const std::string& body) {
  ApiError e;
  auto r = ParseChatRequest(body, &e);
  EXPECT_TRUE(r.has_value()) << body << " -> " << e.message;
  return r.value_or(ChatRequest{});
}

ApiError Refused(const std::string& body) {
  ApiError e;
  EXPECT_FALSE(ParseChatRequest(body, &e).has_value()) << body;
  EXPECT_EQ(e.status, 400) << body;
  return e;
}

TEST(ServeChatRequestTest, MessagesAndSamplingFieldsAreRead) {
  const ChatRequest r = Parse(R"({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_completion_tokens": 7, "max_tokens": 99, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1,
      "seed": 3, "stop": ["\n"], "logprobs": true, "top_logprobs": 4, "n": 1, "tools": null})");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_TRUE(r.max_tokens_given);
  const CompletionRequest& c = r.completion;
  EXPECT_EQ(c.max_tokens, 7);  // max_completion_tokens wins over the deprecated max_tokens
  EXPECT_EQ(c.sampling.temperature, 0.5f);
  EXPECT_EQ(c.sampling.top_k, 40);
  EXPECT_TRUE(c.seeded);
  EXPECT_EQ(c.sampling.seed, 3u);
  EXPECT_EQ(c.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(c.logprobs, 4);
  EXPECT_EQ(c.model, "m");
  EXPECT_FALSE(c.stream.stream);
  EXPECT_FALSE(c.echo);
  const ChatRequest s = Parse(R"({"messages": [{"role": "user", "content": "hi"}], "stream": true,
      "stream_options": {"include_usage": true}})");
  EXPECT_TRUE(s.completion.stream.stream);
  EXPECT_TRUE(s.completion.stream.include_usage);
}

TEST(ServeChatRequestTest, DefaultsAndLogprobsFalse) {
  const ChatRequest r = Parse(R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": false})");
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_FALSE(r.completion.logprobs.has_value());
  EXPECT_EQ(r.completion.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.completion.stream.stream);
  EXPECT_EQ(Parse(R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true})").completion.logprobs, 0);
}

TEST(ServeChatRequestTest, EachBadRequestNamesItsField) {
  struct BadCase {
    const char* body;
    const char* code;
    const char* param;
  };
  const BadCase cases[] = {
      {R"([1])", "invalid_type", ""},
      {R"({"messages": "hi"})", "invalid_type", "messages"},
      {R"({})", "missing_field", "messages"},
      {R"({"messages": []})", "invalid_value", "messages"},
      {R"({"messages": [{"content": "x"}]})", "missing_field", "messages"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "unsupported_value", "messages"},
      {R"({"messages": [{"role": "user"}]})", "missing_field", "messages"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "unsupported_value", "messages"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "unsupported_value", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": []})", "unsupported_value", "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})",
       "unsupported_value", "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false})", "unsupported_value",
       "add_generation_prompt"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 3})", "invalid_type", "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "invalid_value", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "invalid_value",
       "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "invalid_value", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": "9"})", "invalid_type",
       "max_completion_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": true, "logprobs": true})", "unsupported_value",
       "logprobs"},
  };
  for (const BadCase& c : cases) {
    const ApiError e = Refused(c.body);
    EXPECT_EQ(e.code, c.code) << c.body << " -> " << e.message;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(ServeChatPromptTest, OneUserTurnRendersAsTheProbesTemplate) {
  const std::vector<ChatMessage> one = {{"user", "  Write a loop.  "}};
  for (ChatFormat f : {ChatFormat::kChatML, ChatFormat::kLlama3, ChatFormat::kMistral, ChatFormat::kMistralV3}) {
    ApiError e;
    EXPECT_EQ(RenderChat(f, one, &e), ApplyChatTemplate(f, one[0].content, "")) << ChatFormatName(f);
  }
}

TEST(ServeChatPromptTest, ConversationsInEachFamily) {
  const std::vector<ChatMessage> chat = {{"system", "S"}, {"user", "U1"}, {"assistant", "A1"}, {"user", "U2"}};
  ApiError e;
  EXPECT_EQ(RenderChat(ChatFormat::kChatML, chat, &e),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RenderChat(ChatFormat::kLlama3, chat, &e),
            "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU1"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA1<|eot_id|><|start_header_id|>user"
            "<|end_header_id|>\n\nU2<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(RenderChat(ChatFormat::kMistral, chat, &e), "[INST] S\n\nU1 [/INST]A1</s>[INST] U2 [/INST]");
  EXPECT_EQ(RenderChat(ChatFormat::kMistralV3, chat, &e), "[INST] S\n\nU1[/INST]A1</s>[INST] U2[/INST]");
}

TEST(ServeChatPromptTest, NoTemplateAndBadMistralOrderAre400s) {
  ApiError e;
  EXPECT_FALSE(RenderChat(ChatFormat::kNone, {{"user", "x"}}, &e).has_value());
  EXPECT_EQ(e.code, "unsupported_value");
  EXPECT_NE(e.message.find("--chat-template"), std::string::npos) << e.message;
  EXPECT_FALSE(RenderChat(ChatFormat::kMistral, {{"assistant", "a"}, {"user", "u"}}, &e).has_value());
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_FALSE(RenderChat(ChatFormat::kMistral, {{"user", "u"}, {"assistant", "a"}}, &e).has_value());
  EXPECT_FALSE(RenderChat(ChatFormat::kMistral, {{"user", "u"}, {"system", "s"}, {"user", "u"}}, &e).has_value());
}

}  // namespace
}  // namespace kvaudit::serve
