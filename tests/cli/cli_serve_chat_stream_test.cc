// `kvaudit serve`'s chat completions and streaming end to end (docs/serve.md): a greedy chat
// completion is the /v1/completions completion of the templated prompt, token for token; a
// streamed answer's text chunks joined are the unstreamed text (greedy and seeded, with a stop
// string), with [DONE] last; a client that goes away mid-stream frees its worker.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/serve_process.h"

namespace kvaudit {
namespace {

using nlohmann::json;
using testing::ServeProcess;

const std::string kSystem = "You write Python.";
const std::string kUser = "def fibonacci(n):";
// What serve/chat_prompt.h renders for the two messages in ChatML (the bundled model has no
// template of its own, so the server is started with --chat-template chatml).
const std::string kChatMlPrompt =
    "<|im_start|>system\n" + kSystem + "<|im_end|>\n<|im_start|>user\n" + kUser + "<|im_end|>\n<|im_start|>assistant\n";

json Messages() {
  return json::array({{{"role", "system"}, {"content", kSystem}}, {{"role", "user"}, {"content", kUser}}});
}

std::unique_ptr<ServeProcess> StartServer(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--kv", "k=q4_0,v=q4_0", "--ctx", "2048"};
  args.insert(args.end(), extra.begin(), extra.end());
  return ServeProcess::Start(args);
}

// The events of a text/event-stream body: each "data: X\n\n" as X.
std::vector<std::string> Events(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos || body.compare(at, 6, "data: ") != 0) {
      ADD_FAILURE() << "not an SSE event at " << at << ": " << body.substr(at, 80);
      break;
    }
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end + 2;
  }
  return out;
}

struct Streamed {
  std::string text, finish_reason;
  json usage;
  bool done_last = false;
  size_t text_chunks = 0;
};

// Joins a stream's text (completions: choices[0].text; chat: choices[0].delta.content) and checks
// the shape of every chunk on the way.
Streamed Join(const std::string& body, bool chat) {
  Streamed s;
  const std::vector<std::string> events = Events(body);
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i] == "[DONE]") {
      s.done_last = i + 1 == events.size();
      continue;
    }
    const json chunk = json::parse(events[i], nullptr, false);
    EXPECT_EQ(chunk["object"], chat ? "chat.completion.chunk" : "text_completion") << events[i];
    if (chunk["choices"].empty()) {
      s.usage = chunk["usage"];
      continue;
    }
    const json& c = chunk["choices"][0];
    if (chat && i == 0) {
      EXPECT_EQ(c["delta"]["role"], "assistant") << events[i];
    }
    s.text += chat ? c["delta"].value("content", "") : c["text"].get<std::string>();
    ++s.text_chunks;
    if (!c["finish_reason"].is_null()) s.finish_reason = c["finish_reason"];
  }
  return s;
}

TEST(CliServeChatTest, GreedyChatEqualsCompletionOfTheTemplatedPrompt) {
  auto s = StartServer({"--chat-template", "chatml"});
  ASSERT_TRUE(s);
  const int n = 24;
  const auto plain = s->Post("/v1/completions",
                             json{{"prompt", kChatMlPrompt}, {"max_tokens", n}, {"temperature", 0}, {"logprobs", 0}});
  const auto chat = s->Post("/v1/chat/completions", json{{"messages", Messages()},
                                                         {"max_completion_tokens", n},
                                                         {"temperature", 0},
                                                         {"logprobs", true},
                                                         {"top_logprobs", 2}});
  ASSERT_EQ(plain.status, 200) << plain.body;
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.json["object"], "chat.completion");
  EXPECT_EQ(chat.json["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const json& choice = chat.json["choices"][0];
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], plain.json["choices"][0]["text"]);
  EXPECT_EQ(choice["finish_reason"], plain.json["choices"][0]["finish_reason"]);
  EXPECT_EQ(chat.json["usage"], plain.json["usage"]);
  // Token for token: the same pieces with the same logprobs.
  const json& lp = plain.json["choices"][0]["logprobs"];
  const json& content = choice["logprobs"]["content"];
  ASSERT_EQ(content.size(), lp["tokens"].size());
  ASSERT_GT(content.size(), 0u);
  for (size_t i = 0; i < content.size(); ++i) {
    EXPECT_EQ(content[i]["token"], lp["tokens"][i]) << i;
    EXPECT_EQ(content[i]["logprob"], lp["token_logprobs"][i]) << i;
    EXPECT_EQ(content[i]["top_logprobs"].size(), 2u);
    std::string bytes;
    for (int b : content[i]["bytes"]) bytes += static_cast<char>(b);
    EXPECT_EQ(bytes, content[i]["token"].get<std::string>());
  }
}

TEST(CliServeChatTest, NoTemplateIsA400NamingTheFlag) {
  auto s = StartServer();  // the bundled model has no chat template: auto resolves to none
  ASSERT_TRUE(s);
  const auto r = s->Post("/v1/chat/completions", json{{"messages", Messages()}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json["error"]["code"], "unsupported_value");
  EXPECT_NE(r.json["error"]["message"].get<std::string>().find("--chat-template"), std::string::npos) << r.body;
}

TEST(CliServeStreamTest, StreamedTextEqualsUnstreamedForBothRoutes) {
  auto s = StartServer({"--chat-template", "chatml"});
  ASSERT_TRUE(s);
  const json sampled = {{"temperature", 0.9}, {"seed", 11}, {"max_tokens", 40}};
  const json greedy_stop = {{"temperature", 0}, {"max_tokens", 40}, {"stop", json::array({"\n    ", "return"})}};
  const json unicode = {{"temperature", 0.8}, {"seed", 3}, {"max_tokens", 40}};
  const std::vector<std::pair<json, json>> cases = {{json{{"prompt", kUser}}, sampled},
                                                    {json{{"prompt", kUser}}, greedy_stop},
                                                    {json{{"prompt", "# Grüße, naïve café — 日本語の説明: "}}, unicode},
                                                    {json{{"messages", Messages()}}, sampled},
                                                    {json{{"messages", Messages()}}, greedy_stop}};
  for (const auto& [input, sampling] : cases) {
    const bool chat = input.contains("messages");
    const std::string route = chat ? "/v1/chat/completions" : "/v1/completions";
    json body = input;
    body.update(sampling);
    const auto whole = s->Post(route, body);
    ASSERT_EQ(whole.status, 200) << whole.body;
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    const auto streamed = s->Post(route, body);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    const Streamed got = Join(streamed.body, chat);
    const json& c = whole.json["choices"][0];
    // Equal text also means no chunk cut a UTF-8 sequence: a cut one would arrive as U+FFFD (the
    // JSON replaces invalid bytes) where the whole text has the character (the third prompt's
    // completion has 4-byte characters made of several byte tokens).
    EXPECT_EQ(got.text, chat ? c["message"]["content"] : c["text"]) << body.dump();
    EXPECT_EQ(got.finish_reason, c["finish_reason"]) << body.dump();
    EXPECT_EQ(got.usage, whole.json["usage"]) << body.dump();
    EXPECT_TRUE(got.done_last) << streamed.body;
    EXPECT_GT(got.text_chunks, 1u) << streamed.body;
  }
}

// A stream whose reader closes the connection after a few chunks: the worker stops at its next
// token (counted as client_disconnect) and serves the next request.
TEST(CliServeStreamTest, ClientDisconnectCancelsTheCompletion) {
  auto s = StartServer({"--parallel", "1"});
  ASSERT_TRUE(s);
  httplib::Client client("127.0.0.1", s->port());
  client.set_read_timeout(60, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body =
      json{{"prompt", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"}, {"max_tokens", 2000}, {"temperature", 0}, {"stream", true}}
          .dump();
  int received = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++received < 3; };
  const auto aborted = client.send(req);
  EXPECT_FALSE(aborted);  // cancelled by the receiver
  EXPECT_EQ(received, 3);
  const std::string sample = "kvaudit_completions_cancelled_total{reason=\"client_disconnect\"} 1\n";
  std::string metrics;
  for (int i = 0; i < 200 && metrics.find(sample) == std::string::npos; ++i) {  // bounded: 20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    metrics = s->Get("/metrics").body;
  }
  EXPECT_NE(metrics.find(sample), std::string::npos) << metrics;
  const auto next = s->Post("/v1/completions", json{{"prompt", kUser}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(next.status, 200) << next.body;
}

}  // namespace
}  // namespace kvaudit
