// `kvaudit serve`'s limits and lifecycle (docs/serve.md "Limits", "Errors", "Shutdown"): each
// refusal's status and OpenAI-shaped body, the API key, a full queue, SIGTERM with a request in
// flight, and concurrent clients. Every wait is bounded; the child is killed at the end.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

using nlohmann::json;
using testing::HttpReply;
using testing::ServeProcess;

void ExpectOpenAiError(const HttpReply& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.body;
  ASSERT_TRUE(r.json.is_object()) << r.body;
  EXPECT_TRUE(r.json["error"]["message"].is_string()) << r.body;
  EXPECT_TRUE(r.json["error"]["type"].is_string()) << r.body;
  EXPECT_EQ(r.json["error"]["code"], code) << r.body;
}

// /metrics once it holds `sample`, or its last text after 5 s. The server counts a request in
// cpp-httplib's logger, which runs after the response is written, so a client can read its answer
// a moment before the counter moves; a scrape lagging by one request is Prometheus' normal case.
std::string MetricsOnceThere(ServeProcess& s, const std::string& sample) {
  std::string body;
  for (int i = 0; i < 100; ++i) {
    body = s.Get("/metrics").body;
    if (body.find(sample) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return body;
}

TEST(CliServeLimitsTest, BadRequestsAnswer400And413) {
  auto s = ServeProcess::Start({"--ctx", "256"});
  ASSERT_TRUE(s);
  ExpectOpenAiError(s->Post("/v1/completions", std::string("{\"prompt\": ")), 400, "invalid_json");
  ExpectOpenAiError(s->Post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", "many"}}), 400, "invalid_type");
  const auto batch = s->Post("/v1/completions", json{{"prompt", json::array({"a", "b"})}});
  ExpectOpenAiError(batch, 400, "invalid_value");
  EXPECT_NE(batch.json["error"]["message"].get<std::string>().find("one prompt per request"), std::string::npos);
  ExpectOpenAiError(s->Post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 300}}), 400,
                    "context_length_exceeded");
  ExpectOpenAiError(s->Post("/v1/completions", json{{"prompt", json::array({1, 99999999})}}), 400, "invalid_value");
  ExpectOpenAiError(s->Post("/tokenize", json{{"content", 5}}), 400, "invalid_type");
  // Over the 8 MiB body limit: refused unread.
  ExpectOpenAiError(s->Post("/v1/completions", "{\"prompt\": \"" + std::string(9u << 20, 'a') + "\"}"), 413,
                    "payload_too_large");
  EXPECT_EQ(s->Get("/health").status, 200);  // still serving
  const std::string sample = "kvaudit_requests_total{endpoint=\"/v1/completions\",code=\"400\"} 5\n";
  const std::string metrics = MetricsOnceThere(*s, sample);
  EXPECT_NE(metrics.find(sample), std::string::npos) << metrics;
}

TEST(CliServeLimitsTest, ApiKeyRequiredExceptForHealthAndNeverPrinted) {
  const auto dir = testing::MakeTempDir("serve_key");
  const std::string key = "kv-test-key-8d1f";
  std::ofstream(dir / "key") << key << "\n";
  auto s = ServeProcess::Start({"--api-key-file", (dir / "key").string()});
  ASSERT_TRUE(s);
  const json req = {{"prompt", "x"}, {"max_tokens", 1}, {"temperature", 0}};
  ExpectOpenAiError(s->Post("/v1/completions", req), 401, "invalid_api_key");
  ExpectOpenAiError(s->Post("/v1/completions", req, {{"Authorization", "Bearer wrong"}}), 401, "invalid_api_key");
  ExpectOpenAiError(s->Get("/v1/models", {{"Authorization", key}}), 401, "invalid_api_key");
  EXPECT_EQ(s->Post("/v1/completions", req, {{"Authorization", "Bearer " + key}}).status, 200);
  EXPECT_EQ(s->Get("/health").status, 200);
  s->child().Signal(SIGINT);  // Ctrl-C: the same clean stop as SIGTERM
  EXPECT_EQ(s->child().WaitExit(15'000), 0);
  EXPECT_EQ(s->child().Stderr().find(key), std::string::npos);
}

TEST(CliServeLimitsTest, FullQueueAnswers503) {
  auto s = ServeProcess::Start({"--parallel", "1", "--queue", "1", "--ctx", "1024"});
  ASSERT_TRUE(s);
  const json req = {{"prompt", "def f():"}, {"max_tokens", 600}, {"temperature", 0}};
  std::vector<HttpReply> replies(6);
  std::vector<std::thread> clients;
  for (auto& r : replies) clients.emplace_back([&s, &r, &req] { r = s->Post("/v1/completions", req); });
  for (auto& t : clients) t.join();
  int ok = 0, full = 0;
  for (const auto& r : replies) {
    if (r.status == 200) ++ok;
    if (r.status == 503) {
      ++full;
      ExpectOpenAiError(r, 503, "queue_full");
    }
  }
  EXPECT_EQ(ok + full, 6);  // nothing else: no timeouts, no dropped connections
  EXPECT_GE(ok, 1);
  EXPECT_GE(full, 1);
}

TEST(CliServeLimitsTest, ACompletionPastTheRequestTimeoutIs504) {
  auto s = ServeProcess::Start({"--request-timeout", "1"});
  ASSERT_TRUE(s);
  const auto t0 = std::chrono::steady_clock::now();
  // 4000 tokens take well over a second here (each decode step attends to all before it).
  const auto r = s->Post("/v1/completions", json{{"prompt", "def f():"}, {"max_tokens", 4000}, {"temperature", 0}});
  ExpectOpenAiError(r, 504, "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // The worker was released: the next request is answered.
  EXPECT_EQ(s->Post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 2}, {"temperature", 0}}).status, 200);
}

TEST(CliServeLimitsTest, SigtermWithARequestInFlightExitsZero) {
  auto s = ServeProcess::Start({"--ctx", "1024"});
  ASSERT_TRUE(s);
  HttpReply reply;
  std::thread client([&] {
    reply = s->Post("/v1/completions", json{{"prompt", "def f():"}, {"max_tokens", 800}, {"temperature", 0}});
  });
  // Until a worker is running it (bounded: 20 s).
  bool running = false;
  for (int i = 0; i < 400 && !running; ++i) {
    running = s->Get("/metrics").body.find("kvaudit_requests_running 1\n") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(running);
  const auto t0 = std::chrono::steady_clock::now();
  s->child().Signal(SIGTERM);
  const auto code = s->child().WaitExit(20'000);
  client.join();
  EXPECT_EQ(code, 0) << s->child().Stderr();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
  // Completed, or refused with a clean error: never a half-written body.
  if (reply.status == 200) {
    EXPECT_TRUE(reply.json["choices"][0]["text"].is_string()) << reply.body;
  } else {
    ExpectOpenAiError(reply, 503, "shutting_down");
  }
  EXPECT_EQ(s->Get("/health").status, -1);  // nothing listens any more
}

TEST(CliServeLimitsTest, ConcurrentClientsGetTheSequentialAnswers) {
  auto s = ServeProcess::Start({"--parallel", "2", "--queue", "32", "--kv", "k=q8_0,v=q4_0"});
  ASSERT_TRUE(s);
  const std::vector<std::string> prompts = {"import os", "def add(a, b):", "class Stack:", "for i in range(", "# sort"};
  auto ask = [&](const std::string& p) {
    return s->Post("/v1/completions", json{{"prompt", p}, {"max_tokens", 12}, {"temperature", 0}});
  };
  std::map<std::string, std::string> sequential;
  for (const auto& p : prompts) sequential[p] = ask(p).json["choices"][0]["text"];
  std::vector<std::vector<HttpReply>> got(4);
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 5; ++i) got[c].push_back(ask(prompts[static_cast<size_t>((c + i) % 5)]));
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < 4; ++c) {
    ASSERT_EQ(got[c].size(), 5u);
    for (int i = 0; i < 5; ++i) {
      const HttpReply& r = got[c][static_cast<size_t>(i)];
      ASSERT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(r.json["choices"][0]["text"], sequential[prompts[static_cast<size_t>((c + i) % 5)]]) << c << " " << i;
    }
  }
  const std::string sample = "kvaudit_requests_total{endpoint=\"/v1/completions\",code=\"200\"} 25\n";
  const std::string metrics = MetricsOnceThere(*s, sample);
  EXPECT_NE(metrics.find(sample), std::string::npos) << metrics;
}

// Bad flags are the usual one error line and exit 2, before anything listens (RunCli's timeout
// bounds a server that would wrongly start).
TEST(CliServeLimitsTest, BadFlagsAreOneLineExit2) {
  auto busy = ServeProcess::Start({});
  ASSERT_TRUE(busy);
  const std::string model = "serve --model " + testing::BundledModelDir().string();
  const struct {
    std::string args, says;
  } cases[] = {
      {" --port " + std::to_string(busy->port()), "cannot listen on 127.0.0.1:" + std::to_string(busy->port())},
      {" --api-key-file /nonexistent/key", "--api-key-file /nonexistent/key: cannot be read"},
      {" --kv k=bogus", "unknown format 'bogus'"},
      {" --parallel 0", "--parallel"},
      {" --ctx 100000", "--ctx"},
  };
  for (const auto& c : cases) {
    const auto r = testing::RunCli(model + c.args, 20);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find("kvaudit: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << c.args;  // no listening line
  }
}

}  // namespace
}  // namespace kvaudit
