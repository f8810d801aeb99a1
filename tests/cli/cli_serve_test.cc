// `kvaudit serve` end to end (docs/serve.md): the built binary on the bundled model as a child
// process, spoken to over 127.0.0.1 with cpp-httplib. Its answers must be kvaudit's own: greedy
// completions equal `kvaudit generate`, tokens equal `kvaudit tokenize`, prompt logprobs equal
// minus `kvaudit score`'s per-token NLL, all under the same --kv.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "support/fixtures.h"
#include "support/run_cli.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

using nlohmann::json;
using testing::RunCli;
using testing::ServeProcess;

const std::string kKv = "k=q4_0,v=q4_0";
const std::string kPrompt = "def fibonacci(n):";
const std::string kModelFlag = "--model " + testing::BundledModelDir().string() + " ";

std::unique_ptr<ServeProcess> StartServer(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--kv", kKv, "--ctx", "1024"};
  args.insert(args.end(), extra.begin(), extra.end());
  return ServeProcess::Start(args);
}

std::vector<int32_t> Ids(const std::string& line) {
  std::istringstream in(line);
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

TEST(CliServeTest, HealthAndModels) {
  auto s = StartServer();
  ASSERT_TRUE(s);
  const auto health = s->Get("/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json, json({{"status", "ok"}}));
  const auto models = s->Get("/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  EXPECT_EQ(models.json["object"], "list");
  ASSERT_EQ(models.json["data"].size(), 1u);
  EXPECT_EQ(models.json["data"][0]["id"], "kvq-code-16m");
  EXPECT_EQ(models.json["data"][0]["object"], "model");
  EXPECT_EQ(models.json["data"][0]["max_model_len"], 1024);
  const auto missing = s->Get("/v1/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json["error"]["code"], "not_found") << missing.body;
}

TEST(CliServeTest, TokenizeDetokenizeRoundTripEqualsTokenizeCommand) {
  auto s = StartServer();
  ASSERT_TRUE(s);
  const auto with_bos = RunCli("tokenize " + kModelFlag + "--text '" + kPrompt + "'");
  const auto no_bos = RunCli("tokenize " + kModelFlag + "--text '" + kPrompt + "' --no-bos");
  ASSERT_EQ(with_bos.exit_code, 0) << with_bos.err;
  const auto special = s->Post("/tokenize", json{{"content", kPrompt}, {"add_special", true}});
  const auto plain = s->Post("/tokenize", json{{"content", kPrompt}});
  ASSERT_EQ(special.status, 200) << special.body;
  EXPECT_EQ(special.json["tokens"].get<std::vector<int32_t>>(), Ids(with_bos.out));
  EXPECT_EQ(plain.json["tokens"].get<std::vector<int32_t>>(), Ids(no_bos.out));
  const auto back = s->Post("/detokenize", json{{"tokens", plain.json["tokens"]}});
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(back.json["content"], kPrompt);
}

TEST(CliServeTest, GreedyEqualsGenerateForTextAndTokenIds) {
  auto s = StartServer();
  ASSERT_TRUE(s);
  const int n = 24;
  const auto gen = RunCli("generate " + kModelFlag + "--prompt '" + kPrompt + "' --max-tokens " + std::to_string(n) +
                          " --kv " + kKv + " --threads 2");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const auto text = s->Post("/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", n}, {"temperature", 0}});
  ASSERT_EQ(text.status, 200) << text.body;
  const json& choice = text.json["choices"][0];
  EXPECT_EQ(kPrompt + choice["text"].get<std::string>() + "\n", gen.out);
  EXPECT_EQ(text.json["object"], "text_completion");
  EXPECT_EQ(text.json["model"], "kvq-code-16m");
  EXPECT_EQ(text.json["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_GT(text.json["created"].get<int64_t>(), 1700000000);
  EXPECT_EQ(choice["index"], 0);
  EXPECT_TRUE(choice["logprobs"].is_null());
  const json& usage = text.json["usage"];
  const int completion = usage["completion_tokens"];
  EXPECT_EQ(choice["finish_reason"], completion < n ? "stop" : "length");
  EXPECT_EQ(usage["total_tokens"].get<int>(), usage["prompt_tokens"].get<int>() + completion);
  // The same prompt as token ids (BOS included, as the server tokenizes a string) gives the same.
  const auto ids = s->Post("/tokenize", json{{"content", kPrompt}, {"add_special", true}});
  const auto by_ids =
      s->Post("/v1/completions", json{{"prompt", ids.json["tokens"]}, {"max_tokens", n}, {"temperature", 0}});
  ASSERT_EQ(by_ids.status, 200) << by_ids.body;
  EXPECT_EQ(by_ids.json["choices"][0]["text"], choice["text"]);
  EXPECT_EQ(by_ids.json["usage"], usage);
}

TEST(CliServeTest, SeededSamplingIsReproducibleAndEqualsGenerate) {
  auto s = StartServer();
  ASSERT_TRUE(s);
  const json req = {{"prompt", "import os"}, {"max_tokens", 32}, {"temperature", 0.8},
                    {"top_p", 0.95},         {"top_k", 40},      {"seed", 5}};
  const auto a = s->Post("/v1/completions", req);
  const auto b = s->Post("/v1/completions", req);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json["choices"][0]["text"], b.json["choices"][0]["text"]);
  const auto gen = RunCli("generate " + kModelFlag +
                          "--prompt 'import os' --max-tokens 32 --temp 0.8 --top-p 0.95 "
                          "--top-k 40 --seed 5 --kv " +
                          kKv + " --threads 2");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ("import os" + a.json["choices"][0]["text"].get<std::string>() + "\n", gen.out);
  json other = req;
  other["seed"] = 6;
  EXPECT_NE(s->Post("/v1/completions", other).json["choices"][0]["text"], a.json["choices"][0]["text"]);
}

TEST(CliServeTest, StopStringEndsTheTextBeforeIt) {
  auto s = StartServer();
  ASSERT_TRUE(s);
  const json req = {{"prompt", kPrompt}, {"max_tokens", 32}, {"temperature", 0}};
  const std::string full = s->Post("/v1/completions", req).json["choices"][0]["text"];
  ASSERT_GT(full.size(), 12u);
  const std::string stop = full.substr(full.size() / 2, 3);
  json stopped_req = req;
  stopped_req["stop"] = json::array({"\x01never", stop});
  const auto stopped = s->Post("/v1/completions", stopped_req);
  ASSERT_EQ(stopped.status, 200) << stopped.body;
  EXPECT_EQ(stopped.json["choices"][0]["text"], full.substr(0, full.find(stop)));
  EXPECT_EQ(stopped.json["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(stopped.json["usage"]["completion_tokens"].get<int>(), 32);
}

// score --ids-file over the prompt's ids: its per-position NLL under the same cache.
std::vector<double> ScoreNll(const std::vector<int32_t>& ids) {
  const auto dir = testing::MakeTempDir("serve_score");
  {
    std::ofstream f(dir / "ids.txt");
    for (int32_t id : ids) f << id << " ";
  }
  const auto r = RunCli("score " + kModelFlag + "--ids-file " + (dir / "ids.txt").string() + " --jsonl " +
                        (dir / "nll.jsonl").string() + " --kv " + kKv + " --threads 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir / "nll.jsonl");
  std::vector<double> nll;
  for (std::string line; std::getline(in, line);) nll.push_back(json::parse(line)["nll"].get<double>());
  return nll;
}

TEST(CliServeTest, LogprobsEchoAndPromptLogprobsMatchScore) {
  auto s = StartServer();
  ASSERT_TRUE(s);
  const std::string prompt = "import numpy as np\n\ndef mean(xs):\n    return";
  const auto r = s->Post("/v1/completions", json{{"prompt", prompt},
                                                 {"max_tokens", 4},
                                                 {"temperature", 0},
                                                 {"logprobs", 3},
                                                 {"echo", true},
                                                 {"prompt_logprobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json& c = r.json["choices"][0];
  const int np = r.json["usage"]["prompt_tokens"], ng = r.json["usage"]["completion_tokens"];
  const auto ids =
      s->Post("/tokenize", json{{"content", prompt}, {"add_special", true}}).json["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(static_cast<int>(ids.size()), np);
  EXPECT_EQ(c["text"].get<std::string>().rfind(prompt, 0), 0u);  // echo: the prompt comes first
  const json& lp = c["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), static_cast<size_t>(np + ng));
  ASSERT_EQ(lp["token_logprobs"].size(), lp["tokens"].size());
  ASSERT_EQ(lp["top_logprobs"].size(), lp["tokens"].size());
  ASSERT_EQ(lp["text_offset"].size(), lp["tokens"].size());
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["text_offset"][np], prompt.size());  // the first generated token starts after the echo
  for (int i = np; i < np + ng; ++i) {
    // Greedy: the chosen token is the most likely, so its logprob is the top dict's largest.
    double best = -1e30;
    for (const auto& [piece, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    EXPECT_EQ(lp["token_logprobs"][i].get<double>(), best) << i;
    EXPECT_LE(lp["top_logprobs"][i].size(), 4u);
  }
  const json& plp = c["prompt_logprobs"];
  ASSERT_EQ(plp.size(), static_cast<size_t>(np));
  EXPECT_TRUE(plp[0].is_null());
  const std::vector<double> nll = ScoreNll(ids);
  ASSERT_EQ(nll.size(), static_cast<size_t>(np - 1));
  for (int i = 1; i < np; ++i) {
    const json& entry = plp[i][std::to_string(ids[i])];
    ASSERT_TRUE(entry.is_object()) << plp[i];
    const double v = entry["logprob"];
    EXPECT_NEAR(v, -nll[i - 1], 1e-8 + 1e-8 * std::fabs(nll[i - 1])) << i;  // score prints 9 digits
    EXPECT_GE(entry["rank"].get<int>(), 1);
    EXPECT_LE(plp[i].size(), 3u);                         // top 2 and the prompt's token
    EXPECT_EQ(lp["token_logprobs"][i].get<double>(), v);  // echo's logprobs are the same numbers
  }
}

}  // namespace
}  // namespace kvaudit
