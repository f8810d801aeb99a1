// RemoteBackend against canned vLLM and llama-server answers (support/fault_server.h replays the
// documented shapes; no such server runs here): what is sent (every sampling field, the dialect's
// spelling of "off", return_tokens_as_token_ids / return_tokens, cache_prompt off), and what is
// read back — ids from "token_id:<id>" strings or llama-server's tokens with a trailing EOS
// dropped, re-tokenized text when tokens are absent, vLLM prompt_logprobs with the token outside
// the top k, llama-server's teacher forcing one position per request, and one line for an answer
// that ignored the request.
#include <gtest/gtest.h>

#include "endpoint/remote_backend.h"
#include "support/bundled_model.h"
#include "support/fault_server.h"

namespace kvaudit {
namespace {

using nlohmann::json;
using testing::Answer;
using testing::FaultServer;

const Tokenizer& Tok() { return *testing::BundledModel().tokenizer(); }

std::string Models(const std::string& owner) {
  return json{{"object", "list"}, {"data", {{{"id", "org/served-model"}, {"object", "model"}, {"owned_by", owner}}}}}
      .dump();
}

std::unique_ptr<RemoteBackend> Connect(const FaultServer& s, std::optional<Dialect> forced = std::nullopt) {
  HttpOptions o;
  o.max_attempts = 2;
  o.backoff_initial_s = 0.01;
  auto spec = ParseEndpointSpec("http://127.0.0.1:" + std::to_string(s.port()));
  auto b = RemoteBackend::Connect(*spec, "", o, forced, Tok());
  EXPECT_TRUE(b.ok()) << b.error().message;
  return b.ok() ? std::move(*b) : nullptr;
}

json Completion(const std::vector<std::string>& tokens, const std::string& finish) {
  return {{"id", "cmpl-1"},
          {"object", "text_completion"},
          {"choices",
           {{{"index", 0},
             {"text", "ignored"},
             {"finish_reason", finish},
             {"logprobs", {{"tokens", tokens}, {"token_logprobs", json::array()}}}}}}};
}

TEST(EndpointCannedDialectsTest, VllmIdsComeFromTokenIdStringsAndEosIsDropped) {
  ASSERT_GE(Tok().eos_id(), 0);
  const std::string eos = "token_id:" + std::to_string(Tok().eos_id());
  FaultServer s(
      {Answer(200, Models("vllm")), Answer(200, Completion({"token_id:17", "token_id:4", eos}, "stop").dump()),
       Answer(200, Completion({"token_id:17", "hello"}, "length").dump())},
      Answer(500, "{}"));
  auto remote = Connect(s);
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->dialect(), Dialect::kVllm);
  EXPECT_EQ(remote->model_id(), "org/served-model");
  SamplingParams p;
  p.temperature = 0.5f;
  p.seed = 99;
  auto ids = remote->Generate(std::vector<int32_t>{1, 2, 3}, 8, p);
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(*ids, (std::vector<int32_t>{17, 4}));
  const json sent = json::parse(s.last_body());
  EXPECT_EQ(sent["prompt"], json({1, 2, 3}));
  EXPECT_EQ(sent["model"], "org/served-model");
  EXPECT_EQ(sent["max_tokens"], 8);
  EXPECT_EQ(sent["temperature"], 0.5);
  EXPECT_EQ(sent["top_k"], -1);  // vLLM's off
  EXPECT_EQ(sent["top_p"], 1.0);
  EXPECT_EQ(sent["min_p"], 0.0);
  EXPECT_EQ(sent["seed"], 99);
  EXPECT_EQ(sent["logprobs"], 0);
  EXPECT_EQ(sent["return_tokens_as_token_ids"], true);
  auto ignored = remote->Generate(std::vector<int32_t>{1}, 8, p);
  ASSERT_FALSE(ignored.ok());
  EXPECT_NE(ignored.error().message.find("/v1/completions: choices[0].logprobs.tokens[1] is not 'token_id:<id>'"),
            std::string::npos)
      << ignored.error().message;
}

TEST(EndpointCannedDialectsTest, VllmPromptLogprobsWithTheTokenOutsideTheTopK) {
  // Two positions; at position 1 the prompt's token 7 is rank 3, outside the top 2.
  const json pl = json::array({nullptr,
                               {{"7", {{"logprob", -2.5}, {"rank", 3}, {"decoded_token", "a"}}},
                                {"9", {{"logprob", -0.5}, {"rank", 1}, {"decoded_token", "b"}}},
                                {"3", {{"logprob", -1.25}, {"rank", 2}, {"decoded_token", "c"}}}},
                               {{"5", {{"logprob", -0.125}, {"rank", 1}, {"decoded_token", "d"}}},
                                {"2", {{"logprob", -3.0}, {"rank", 2}, {"decoded_token", "e"}}}}});
  const json reply = {{"choices", {{{"index", 0}, {"text", "x"}, {"prompt_logprobs", pl}}}}};
  FaultServer s({Answer(200, Models("vllm")), Answer(200, reply.dump())},
                Answer(200, R"({"choices": [{"text": ""}]})"));
  auto remote = Connect(s);
  ASSERT_TRUE(remote);
  auto got = remote->PromptLogprobs(std::vector<int32_t>{1, 7, 5}, 2);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].token, 7);
  EXPECT_EQ((*got)[0].logprob, -2.5);
  EXPECT_EQ((*got)[0].rank, 3);
  EXPECT_EQ((*got)[0].top, (std::vector<std::pair<int32_t, double>>{{9, -0.5}, {3, -1.25}}));
  EXPECT_EQ((*got)[1].rank, 1);
  EXPECT_EQ((*got)[1].top, (std::vector<std::pair<int32_t, double>>{{5, -0.125}, {2, -3.0}}));
  const json sent = json::parse(s.last_body());
  EXPECT_EQ(sent["prompt_logprobs"], 2);
  EXPECT_EQ(sent["max_tokens"], 1);
  auto missing = remote->PromptLogprobs(std::vector<int32_t>{1, 7, 5}, 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("prompt_logprobs is missing"), std::string::npos) << missing.error().message;
}

// llama-server's answer to one forced position, in its /completion shape
// (tools/server/server-task.cpp probs_vector_to_json @de3ff815): the sampled token with its logprob
// and the top k, most likely first.
json Forced(int32_t id, double logprob, const std::vector<std::pair<int32_t, double>>& top) {
  json list = json::array();
  for (const auto& [t, lp] : top) list.push_back({{"id", t}, {"token", "x"}, {"bytes", {120}}, {"logprob", lp}});
  return {{"content", "x"},
          {"tokens", {id}},
          {"stop", true},
          {"completion_probabilities",
           {{{"id", id}, {"token", "x"}, {"bytes", {120}}, {"logprob", logprob}, {"top_logprobs", list}}}}};
}

// Teacher forcing through llama-server: one /completion per position from `first` on, over the
// prefix before it, the next token forced by logit_bias under greedy sampling, n_probs k and the
// prompt cache on; the forced token's logprob is read even outside the top k; a server that
// sampled another token (logit_bias ignored) is one line.
TEST(EndpointCannedDialectsTest, LlamaServerTeacherForcesOnePositionPerRequest) {
  FaultServer s({Answer(200, Models("llamacpp")), Answer(200, Forced(7, -2.5, {{9, -0.5}, {3, -1.25}}).dump()),
                 Answer(200, Forced(5, -0.125, {{5, -0.125}, {2, -3.0}}).dump()),
                 Answer(200, Forced(4, -0.25, {{4, -0.25}, {2, -3.0}}).dump())},
                Answer(500, "{}"));
  auto remote = Connect(s);
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->dialect(), Dialect::kLlamaServer);
  EXPECT_TRUE(remote->has_forced_top_k());
  auto got = remote->PromptLogprobs(std::vector<int32_t>{1, 8, 7, 5}, 2, /*first=*/1);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].token, 8);  // before `first`: the token only
  EXPECT_TRUE((*got)[0].top.empty());
  EXPECT_EQ((*got)[1].token, 7);
  EXPECT_EQ((*got)[1].logprob, -2.5);
  EXPECT_EQ((*got)[1].rank, 3);  // outside the top 2
  EXPECT_EQ((*got)[1].top, (std::vector<std::pair<int32_t, double>>{{9, -0.5}, {3, -1.25}}));
  EXPECT_EQ((*got)[2].rank, 1);
  EXPECT_EQ((*got)[2].top, (std::vector<std::pair<int32_t, double>>{{5, -0.125}, {2, -3.0}}));
  const json sent = json::parse(s.last_body());  // the last position: prefix 1 8 7, forcing 5
  EXPECT_EQ(sent["prompt"], json({1, 8, 7}));
  EXPECT_EQ(sent["logit_bias"], json::array({json::array({5, 1e6})}));
  EXPECT_EQ(sent["n_probs"], 2);
  EXPECT_EQ(sent["n_predict"], 1);
  EXPECT_EQ(sent["cache_prompt"], true);
  EXPECT_EQ(sent["post_sampling_probs"], false);
  EXPECT_EQ(sent["temperature"], 0.0);
  auto ignored = remote->PromptLogprobs(std::vector<int32_t>{1, 8, 7}, 2, 1);
  ASSERT_FALSE(ignored.ok());
  EXPECT_NE(ignored.error().message.find("/completion: position 2: the server sampled 4 where logit_bias forced 7"),
            std::string::npos)
      << ignored.error().message;
}

// A token whose text is an incomplete UTF-8 sequence comes back from llama-server without
// completion_probabilities (it holds such text back): the position is asked again with an ASCII
// token forced and n_probs over the whole vocabulary, and the true token read from that list.
TEST(EndpointCannedDialectsTest, LlamaServerByteTokenIsReadFromTheWholeVocabulary) {
  const int32_t a = Tok().Encode("a", false, false).at(0);
  const json held_back = {
      {"content", "\xef\xbf\xbd"}, {"tokens", {128}}, {"stop", true}, {"completion_probabilities", json::array()}};
  FaultServer s({Answer(200, Models("llamacpp")), Answer(200, held_back.dump()),
                 Answer(200, Forced(a, -6.0, {{9, -0.5}, {3, -1.25}, {128, -2.0}, {a, -6.0}}).dump())},
                Answer(500, "{}"));
  auto remote = Connect(s);
  ASSERT_TRUE(remote);
  auto got = remote->PromptLogprobs(std::vector<int32_t>{1, 128}, 2, /*first=*/0);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].token, 128);
  EXPECT_EQ((*got)[0].logprob, -2.0);
  EXPECT_EQ((*got)[0].rank, 3);  // third of the vocabulary: outside the top 2
  EXPECT_EQ((*got)[0].top, (std::vector<std::pair<int32_t, double>>{{9, -0.5}, {3, -1.25}}));
  const json sent = json::parse(s.last_body());
  EXPECT_EQ(sent["logit_bias"], json::array({json::array({a, 1e6})}));
  EXPECT_GE(sent["n_probs"].get<int64_t>(), 1 << 20);
}

TEST(EndpointCannedDialectsTest, LlamaServerNativeTokensThenReTokenizedText) {
  const int32_t eos = Tok().eos_id();
  const std::vector<int32_t> text_ids = Tok().Encode("return x", false);
  FaultServer s({Answer(200, Models("llamacpp")),
                 Answer(200, json{{"content", "whatever"}, {"tokens", {11, 12, eos}}, {"stop", true}}.dump()),
                 Answer(200, json{{"content", "return x"}, {"tokens", json::array()}, {"stop", true}}.dump())},
                Answer(500, "{}"));
  auto remote = Connect(s);
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->dialect(), Dialect::kLlamaServer);
  auto ids = remote->Generate(std::vector<int32_t>{1, 2}, 5, SamplingParams{});
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(*ids, (std::vector<int32_t>{11, 12}));
  EXPECT_FALSE(remote->ids_retokenized());
  const json sent = json::parse(s.last_body());
  EXPECT_EQ(sent["n_predict"], 5);
  EXPECT_EQ(sent["return_tokens"], true);
  EXPECT_EQ(sent["cache_prompt"], false);
  EXPECT_EQ(sent["top_k"], 0);    // llama-server's off (its default is 40)
  EXPECT_EQ(sent["min_p"], 0.0);  // its default is 0.05
  EXPECT_EQ(sent["samplers"], json({"temperature", "top_k", "top_p", "min_p"}));
  auto text = remote->Generate(std::vector<int32_t>{1, 2}, 5, SamplingParams{});
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, text_ids);
  EXPECT_TRUE(remote->ids_retokenized());
}

TEST(EndpointCannedDialectsTest, UnknownServerIsRefusedWithTheDialectHint) {
  FaultServer s({Answer(200, Models("acme")), Answer(404, R"({"error": {"message": "no /props"}})")},
                Answer(500, "{}"));
  HttpOptions o;
  o.max_attempts = 1;
  auto spec = ParseEndpointSpec("http://127.0.0.1:" + std::to_string(s.port()));
  auto b = RemoteBackend::Connect(*spec, "", o, std::nullopt, Tok());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("cannot tell which server this is (/v1/models owned_by 'acme', no /props)"),
            std::string::npos)
      << b.error().message;
  EXPECT_EQ(s.requests(), 2);
}

}  // namespace
}  // namespace kvaudit
