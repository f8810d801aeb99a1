// The request parser of `kvaudit serve` (src/serve/completion_request.h): every field, its
// default, and each 400 with its code, param and message (docs/serve.md "POST /v1/completions").
#include <gtest/gtest.h>

#include <string>

#include "serve/completion_request.h"

namespace kvaudit::serve {
namespace {

CompletionRequest Parse(const std::string& body) {
  ApiError e;
  auto r = ParseCompletionRequest(body, &e);
  EXPECT_TRUE(r.has_value()) << body << " -> " << e.message;
  return r.value_or(CompletionRequest{});
}

ApiError Refused(const std::string& body) {
  ApiError e;
  auto r = ParseCompletionRequest(body, &e);
  EXPECT_FALSE(r.has_value()) << body;
  EXPECT_EQ(e.status, 400) << body;
  EXPECT_EQ(e.type, "invalid_request_error") << body;
  return e;
}

TEST(ServeRequestTest, DefaultsFollowOpenAi) {
  const CompletionRequest r = Parse(R"({"prompt": "def f():"})");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_text, "def f():");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_EQ(r.sampling.min_p, 0.0f);
  EXPECT_FALSE(r.seeded);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.logprobs.has_value());
  EXPECT_FALSE(r.prompt_logprobs.has_value());
  EXPECT_FALSE(r.echo);
  EXPECT_EQ(r.model, "");
}

TEST(ServeRequestTest, EveryFieldIsRead) {
  const CompletionRequest r = Parse(R"({"model": "m", "prompt": [1, 2, 300], "max_tokens": 7, "temperature": 0.5,
      "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 18446744073709551615, "stop": ["\n\n", "END"],
      "logprobs": 3, "echo": true, "prompt_logprobs": 2, "user": "u", "n": 1, "stream": false,
      "presence_penalty": 0, "frequency_penalty": 0.0, "logit_bias": {}, "unknown_field": {"x": 1}})");
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 300}));
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.sampling.seed, 18446744073709551615ull);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.prompt_logprobs, 2);
}

TEST(ServeRequestTest, OneStopStringNullsAndVllmTopKOff) {
  const CompletionRequest r = Parse(R"({"prompt": "x", "stop": "\n", "top_k": -1, "logprobs": null, "seed": -5,
      "max_tokens": 0, "temperature": 0})");
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_FALSE(r.logprobs.has_value());
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(int64_t{-5}));
  EXPECT_EQ(r.max_tokens, 0);  // echo + logprobs with max_tokens 0 scores a prompt (lm-eval's way)
  EXPECT_EQ(r.sampling.temperature, 0.0f);
}

struct BadCase {
  const char* body;
  const char* code;
  const char* param;
  const char* message_part;
};

TEST(ServeRequestTest, EachBadRequestNamesItsField) {
  const BadCase cases[] = {
      {R"({"prompt": )", "invalid_json", "", "not valid JSON"},
      {R"([1, 2])", "invalid_type", "", "must be a JSON object"},
      {R"({"max_tokens": 3})", "missing_field", "prompt", "'prompt' is required"},
      {R"({"prompt": ["a", "b"]})", "invalid_value", "prompt", "one prompt per request"},
      {R"({"prompt": [[1, 2]]})", "invalid_value", "prompt", "one prompt per request"},
      {R"({"prompt": []})", "invalid_value", "prompt", "empty array"},
      {R"({"prompt": [1, "a"]})", "invalid_type", "prompt", "array of token ids"},
      {R"({"prompt": [1, -2]})", "invalid_value", "prompt", "token ids"},
      {R"({"prompt": 5})", "invalid_type", "prompt", "a string or an array"},
      {R"({"prompt": "x", "max_tokens": "16"})", "invalid_type", "max_tokens", "an integer"},
      {R"({"prompt": "x", "max_tokens": 1.5})", "invalid_type", "max_tokens", "an integer"},
      {R"({"prompt": "x", "max_tokens": -1})", "invalid_value", "max_tokens", "in [0, "},
      {R"({"prompt": "x", "temperature": "hot"})", "invalid_type", "temperature", "a number"},
      {R"({"prompt": "x", "temperature": 2.5})", "invalid_value", "temperature", "in [0"},
      {R"({"prompt": "x", "top_p": 0})", "invalid_value", "top_p", "in (0, 1]"},
      {R"({"prompt": "x", "top_p": 1.5})", "invalid_value", "top_p", "in [0"},
      {R"({"prompt": "x", "top_k": -2})", "invalid_value", "top_k", "in [-1, "},
      {R"({"prompt": "x", "min_p": true})", "invalid_type", "min_p", "a number"},
      {R"({"prompt": "x", "seed": "1"})", "invalid_type", "seed", "an integer"},
      {R"({"prompt": "x", "stop": 3})", "invalid_type", "stop", "a string or an array of strings"},
      {R"({"prompt": "x", "stop": [""]})", "invalid_value", "stop", "strings of 1 to"},
      {R"({"prompt": "x", "stop": ["a", 1]})", "invalid_type", "stop", "array of strings"},
      {R"({"prompt": "x", "logprobs": true})", "invalid_type", "logprobs", "an integer"},
      {R"({"prompt": "x", "logprobs": 21})", "invalid_value", "logprobs", "in [0, 20]"},
      {R"({"prompt": "x", "prompt_logprobs": -1})", "invalid_value", "prompt_logprobs", "in [0, 20]"},
      {R"({"prompt": "x", "echo": 1})", "invalid_type", "echo", "true or false"},
      {R"({"prompt": "x", "model": 7})", "invalid_type", "model", "a string"},
      {R"({"prompt": "x", "user": 7})", "invalid_type", "user", "a string"},
      {R"({"prompt": "x", "n": 2})", "unsupported_value", "n", "one choice per request"},
      {R"({"prompt": "x", "best_of": 3})", "unsupported_value", "best_of", "one choice per request"},
      {R"({"prompt": "x", "stream": 1})", "invalid_type", "stream", "true or false"},
      {R"({"prompt": "x", "stream": true, "logprobs": 2})", "unsupported_value", "logprobs",
       "with 'stream' is not built"},
      {R"({"prompt": "x", "stream": true, "echo": true})", "unsupported_value", "echo", "with 'stream' is not built"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "invalid_value", "stream_options",
       "only allowed"},
      {R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})", "invalid_type", "stream_options",
       "true or false"},
      {R"({"prompt": "x", "presence_penalty": 0.5})", "unsupported_value", "presence_penalty", "not built yet"},
      {R"({"prompt": "x", "logit_bias": {"1": 5}})", "unsupported_value", "logit_bias", "not built yet"},
      {R"({"prompt": "x", "suffix": "y"})", "unsupported_value", "suffix", "not built yet"},
  };
  for (const BadCase& c : cases) {
    const ApiError e = Refused(c.body);
    EXPECT_EQ(e.code, c.code) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.body << " -> " << e.message;
  }
}

TEST(ServeRequestTest, TooManyStopsAndInvalidUtf8AreRefused) {
  std::string many = R"({"prompt": "x", "stop": [)";
  for (int i = 0; i <= kMaxStops; ++i) many += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  EXPECT_EQ(Refused(many + "]}").param, "stop");
  EXPECT_EQ(Refused("{\"prompt\": \"\xff\xfe\"}").code, "invalid_json");  // JSON text is UTF-8 (RFC 8259)
}

TEST(ServeRequestTest, ErrorJsonHasOpenAisShape) {
  const ApiError e = Refused(R"({"prompt": "x", "echo": 1})");
  const nlohmann::json j = e.ToJson();
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "invalid_type");
  EXPECT_EQ(j["error"]["param"], "echo");
  EXPECT_TRUE(j["error"]["message"].is_string());
  ApiError none;
  none.message = "m";
  EXPECT_TRUE(none.ToJson()["error"]["param"].is_null());
  EXPECT_TRUE(none.ToJson()["error"]["code"].is_null());
}

TEST(ServeRequestTest, ModelChecksVocabularyEmptinessAndContext) {
  CompletionRequest r = Parse(R"({"prompt": [1, 2, 99], "max_tokens": 10})");
  EXPECT_FALSE(CheckAgainstModel(r, 3, 100, 13).has_value());
  auto over = CheckAgainstModel(r, 3, 100, 12);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code, "context_length_exceeded");
  EXPECT_NE(over->message.find("need 13"), std::string::npos) << over->message;
  auto vocab = CheckAgainstModel(r, 3, 99, 100);
  ASSERT_TRUE(vocab.has_value());
  EXPECT_NE(vocab->message.find("token id 99 is not below the vocabulary size 99"), std::string::npos);
  auto empty = CheckAgainstModel(Parse(R"({"prompt": ""})"), 0, 100, 100);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->param, "prompt");
}

TEST(ServeRequestTest, TokenizeAndDetokenizeBodies) {
  ApiError e;
  auto t = ParseTokenizeRequest(R"({"content": "hi", "add_special": true})", &e);
  ASSERT_TRUE(t.has_value()) << e.message;
  EXPECT_EQ(t->content, "hi");
  EXPECT_TRUE(t->add_special);
  auto t2 = ParseTokenizeRequest(R"({"content": "hi"})", &e);
  ASSERT_TRUE(t2.has_value());
  EXPECT_FALSE(t2->add_special);  // llama-server's default
  EXPECT_FALSE(ParseTokenizeRequest(R"({"content": 1})", &e).has_value());
  EXPECT_EQ(e.param, "content");
  EXPECT_FALSE(ParseTokenizeRequest(R"({"content": "x", "add_special": "yes"})", &e).has_value());
  EXPECT_EQ(e.param, "add_special");
  auto d = ParseDetokenizeRequest(R"({"tokens": [0, 5, 9]})", 10, &e);
  ASSERT_TRUE(d.has_value()) << e.message;
  EXPECT_EQ(*d, (std::vector<int32_t>{0, 5, 9}));
  EXPECT_FALSE(ParseDetokenizeRequest(R"({"tokens": [10]})", 10, &e).has_value());
  EXPECT_EQ(e.code, "invalid_value");
  EXPECT_FALSE(ParseDetokenizeRequest(R"({"tokens": "1 2"})", 10, &e).has_value());
  EXPECT_EQ(e.code, "invalid_type");
  EXPECT_FALSE(ParseDetokenizeRequest(R"({})", 10, &e).has_value());
  EXPECT_EQ(e.code, "missing_field");
}

TEST(ServeRequestTest, ReturnTokensAsTokenIdsIsVllmsBoolean) {
  EXPECT_FALSE(Parse(R"({"prompt": "x"})").return_tokens_as_token_ids);
  EXPECT_TRUE(
      Parse(R"({"prompt": [1, 2], "logprobs": 0, "return_tokens_as_token_ids": true})").return_tokens_as_token_ids);
  EXPECT_FALSE(Parse(R"({"prompt": "x", "return_tokens_as_token_ids": null})").return_tokens_as_token_ids);
  const ApiError e = Refused(R"({"prompt": "x", "return_tokens_as_token_ids": 1})");
  EXPECT_EQ(e.param, "return_tokens_as_token_ids");
  EXPECT_EQ(e.code, "invalid_type");
}

}  // namespace
}  // namespace kvaudit::serve
