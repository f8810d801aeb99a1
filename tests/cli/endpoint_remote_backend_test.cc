// RemoteBackend (endpoint/remote_backend.h) against a real `kvaudit serve` on the bundled model
// (support/serve_process.h, loopback, OS-chosen port): through the API, the served engine must be
// the in-process engine exactly — greedy and seeded sampled generation token for token, prompt
// logprobs bitwise the teacher-forced log-softmax (both are double LogSumExp over the same f32
// logits, and nlohmann writes doubles with round-trip precision), the tokenizer check passes and
// names the first differing token of a mutated tokenizer, and concurrent callers lose and
// duplicate nothing.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "endpoint/remote_backend.h"
#include "run/generation_backend.h"
#include "run/kv_configs.h"
#include "run/log_softmax.h"
#include "support/bundled_model.h"
#include "support/serve_process.h"

namespace kvaudit {
namespace {

using testing::ServeProcess;

const std::string kF32 = "k=f32,v=f32";
const int kCtx = 512;
const std::vector<std::string> kPrompts = {
    "def fibonacci(n):", "import numpy as np\n\nclass Matrix:\n    def __init__(self, rows):",
    "for (int i = 0; i < n; ++i) {", "# Sort the list in place\ndef sort_in_place(xs):"};

const Model& Bundled() { return testing::BundledModel(); }
const Tokenizer& Tok() { return *Bundled().tokenizer(); }

std::vector<int32_t> Ids(const std::string& text) { return Tok().Encode(text, Tok().add_bos_default()); }

HttpOptions Fast() {
  HttpOptions o;
  o.timeout_s = 60;
  o.max_attempts = 3;
  o.backoff_initial_s = 0.05;
  o.backoff_max_s = 0.2;
  o.max_total_s = 120;
  return o;
}

std::unique_ptr<RemoteBackend> Connect(const ServeProcess& s, std::optional<Dialect> forced = std::nullopt,
                                       std::string key = "") {
  auto spec = ParseEndpointSpec("f32=http://127.0.0.1:" + std::to_string(s.port()));
  EXPECT_TRUE(spec.ok());
  auto b = RemoteBackend::Connect(*spec, std::move(key), Fast(), forced, Tok());
  EXPECT_TRUE(b.ok()) << b.error().message;
  return b.ok() ? std::move(*b) : nullptr;
}

// The in-process reference: the f32 cache through LocalBackend.
struct Local {
  ThreadPool pool{2};
  Expected<BuiltCache> built = BuildCache(Bundled(), kF32, "", kCtx, pool);
  std::unique_ptr<LocalBackend> backend;
  Local() {
    EXPECT_TRUE(built.ok()) << built.error().message;
    backend = std::make_unique<LocalBackend>(Bundled(), *built->cache, pool);
  }
};

TEST(EndpointRemoteBackendTest, DetectsKvauditServeAndItsModel) {
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx)});
  ASSERT_TRUE(s);
  auto remote = Connect(*s);
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->dialect(), Dialect::kKvaudit);
  EXPECT_EQ(remote->detection(), "GET /v1/models: owned_by 'kvaudit'");
  EXPECT_EQ(remote->model_id(), "kvq-code-16m");
  EXPECT_FALSE(remote->has_full_logits());
}

TEST(EndpointRemoteBackendTest, GreedyAndSeededGenerationEqualTheLocalBackend) {
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx)});
  ASSERT_TRUE(s);
  auto remote = Connect(*s);
  ASSERT_TRUE(remote);
  Local local;
  SamplingParams greedy;
  SamplingParams seeded;
  seeded.temperature = 0.8f;
  seeded.seed = 1234;
  SamplingParams filtered = seeded;
  filtered.top_k = 40;
  filtered.top_p = 0.9f;
  filtered.min_p = 0.05f;
  int sampled_differs = 0;  // the seeded draws are real draws, not the greedy path again
  for (const std::string& prompt : kPrompts) {
    const std::vector<int32_t> ids = Ids(prompt);
    std::vector<std::vector<int32_t>> outs;
    for (const SamplingParams& p : {greedy, seeded, filtered}) {
      auto want = local.backend->Generate(ids, 24, p);
      auto got = remote->Generate(ids, 24, p);
      ASSERT_TRUE(want.ok() && got.ok()) << (got.ok() ? "" : got.error().message);
      EXPECT_EQ(*got, *want) << prompt << " temperature " << p.temperature << " top_k " << p.top_k;
      EXPECT_FALSE(got->empty());
      outs.push_back(*got);
    }
    sampled_differs += outs[1] != outs[0];
  }
  EXPECT_GE(sampled_differs, 2);
  EXPECT_FALSE(remote->ids_retokenized());
  auto none = remote->Generate(Ids(kPrompts[0]), 0, greedy);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(EndpointRemoteBackendTest, PromptLogprobsAreBitwiseTheInProcessLogSoftmax) {
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx)});
  ASSERT_TRUE(s);
  auto remote = Connect(*s);
  ASSERT_TRUE(remote);
  Local local;
  const int k = 5;
  const size_t vocab = static_cast<size_t>(Bundled().config().vocab_size);
  for (const std::string& text : {kPrompts[1], kPrompts[3]}) {
    const std::vector<int32_t> ids = Ids(text);
    auto got = remote->PromptLogprobs(ids, k);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), ids.size() - 1);
    const std::span<const int32_t> all(ids);
    const std::vector<float> logits = local.backend->ForcedLogits(all.first(1), all.subspan(1));  // [n-1, vocab]
    int matched_top = 0;
    for (size_t i = 1; i < ids.size(); ++i) {
      const std::span<const float> row(logits.data() + (i - 1) * vocab, vocab);
      const double lse = LogSumExp(row);
      const PromptPositionLogprobs& p = (*got)[i - 1];
      EXPECT_EQ(p.token, ids[i]);
      EXPECT_EQ(p.logprob, -TokenNll(row, lse, ids[i])) << "position " << i;  // bitwise
      const float mine = row[static_cast<size_t>(ids[i])];
      EXPECT_EQ(p.rank, 1 + std::count_if(row.begin(), row.end(), [mine](float x) { return x > mine; })) << i;
      ASSERT_EQ(p.top.size(), static_cast<size_t>(k)) << i;
      EXPECT_EQ(p.top[0].first, Argmax(row)) << i;
      for (const auto& [id, lp] : p.top) {
        EXPECT_EQ(lp, -TokenNll(row, lse, id)) << i;  // bitwise
        matched_top += 1;
      }
      for (size_t j = 1; j < p.top.size(); ++j) EXPECT_GE(p.top[j - 1].second, p.top[j].second);
    }
    EXPECT_EQ(matched_top, k * static_cast<int>(ids.size() - 1));
  }
  auto openai = Connect(*s, Dialect::kOpenAI);
  ASSERT_TRUE(openai);
  auto refused = openai->PromptLogprobs(Ids(kPrompts[0]), 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("the openai dialect has no prompt logprobs"), std::string::npos);
}

// The bundled tokenizer with one token changed: the third id of every encoding becomes its
// neighbour, as a model whose vocabulary differs by one merge would.
class MutatedTokenizer final : public Tokenizer {
 public:
  explicit MutatedTokenizer(const Tokenizer& base) : base_(base) {}
  std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special) const override {
    std::vector<int32_t> ids = base_.Encode(text, add_bos, parse_special);
    if (ids.size() > 2) ids[2] = (ids[2] + 1) % base_.vocab_size();
    return ids;
  }
  std::string Decode(std::span<const int32_t> ids, bool render_special) const override {
    return base_.Decode(ids, render_special);
  }
  const std::string& TokenString(int32_t id) const override { return base_.TokenString(id); }
  int32_t vocab_size() const override { return base_.vocab_size(); }
  int32_t bos_id() const override { return base_.bos_id(); }
  int32_t eos_id() const override { return base_.eos_id(); }
  bool add_bos_default() const override { return base_.add_bos_default(); }
  void Digest(const DigestSink& add) const override { base_.Digest(add); }

 private:
  const Tokenizer& base_;
};

TEST(EndpointRemoteBackendTest, TokenizerCheckPassesAndNamesTheFirstDifferingToken) {
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx)});
  ASSERT_TRUE(s);
  auto remote = Connect(*s);
  ASSERT_TRUE(remote);
  auto ok = remote->CheckTokenizer(Tok(), kPrompts);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->checked);
  EXPECT_EQ(ok->samples, static_cast<int>(kPrompts.size()));
  EXPECT_GT(ok->tokens, 20);
  const MutatedTokenizer mutated(Tok());
  auto bad = remote->CheckTokenizer(mutated, kPrompts);
  ASSERT_FALSE(bad.ok());
  const std::vector<int32_t> real = Ids(kPrompts[0]);
  const int32_t local_id = (real[2] + 1) % Tok().vocab_size();
  const int32_t one_local[1] = {local_id}, one_server[1] = {real[2]};
  const std::string want =
      "/tokenize: the server's tokenizer differs from the local one: sample 0 'def fibonacci(n):', "
      "token 2: local " +
      std::to_string(local_id) + " '" + Tok().Decode(one_local, true) + "', server " + std::to_string(real[2]) + " '" +
      Tok().Decode(one_server) + "'; hint: ";
  EXPECT_NE(bad.error().message.find(want), std::string::npos) << bad.error().message << "\nwant: " << want;
  EXPECT_EQ(bad.error().message.find('\n'), std::string::npos);
  auto openai = Connect(*s, Dialect::kOpenAI);
  ASSERT_TRUE(openai);
  auto unchecked = openai->CheckTokenizer(Tok(), kPrompts);
  ASSERT_TRUE(unchecked.ok());
  EXPECT_FALSE(unchecked->checked);
  EXPECT_NE(unchecked->note.find("no /tokenize"), std::string::npos);
}

TEST(EndpointRemoteBackendTest, OpenAiDialectReTokenizesTheText) {
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx)});
  ASSERT_TRUE(s);
  auto remote = Connect(*s, Dialect::kOpenAI);
  ASSERT_TRUE(remote);
  Local local;
  const std::vector<int32_t> ids = Ids(kPrompts[0]);
  auto want = local.backend->Generate(ids, 16, SamplingParams{});
  auto got = remote->Generate(ids, 16, SamplingParams{});
  ASSERT_TRUE(want.ok() && got.ok()) << (got.ok() ? "" : got.error().message);
  EXPECT_TRUE(remote->ids_retokenized());
  EXPECT_EQ(Tok().Decode(*got), Tok().Decode(*want));  // the same text; the ids are an approximation
  SamplingParams top_k;
  top_k.temperature = 1;
  top_k.top_k = 5;
  auto refused = remote->Generate(ids, 4, top_k);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("the openai dialect has no top_k or min_p"), std::string::npos);
}

TEST(EndpointRemoteBackendTest, EightThreadsLoseAndDuplicateNothing) {
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx), "--parallel", "2", "--queue", "16"});
  ASSERT_TRUE(s);
  auto remote = Connect(*s);
  ASSERT_TRUE(remote);
  const int threads = 8, per_thread = 4, n = 6;
  std::vector<std::vector<int32_t>> prompts;  // [threads * per_thread] distinct prompts
  for (int i = 0; i < threads * per_thread; ++i)
    prompts.push_back(Ids("x" + std::to_string(i) + " = compute(" + std::to_string(i * 7) + ")\n"));
  Local local;
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) want.push_back(*local.backend->Generate(p, n, SamplingParams{}));
  // Distinct answers, so a response delivered to the wrong caller would show.
  EXPECT_GE(std::set<std::vector<int32_t>>(want.begin(), want.end()).size(), want.size() / 2);
  std::vector<std::vector<int32_t>> got(prompts.size());
  std::vector<std::string> errors(prompts.size());
  std::atomic<int> answered{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const size_t slot = static_cast<size_t>(t * per_thread + i);
        auto r = remote->Generate(prompts[slot], n, SamplingParams{});
        if (r.ok()) {
          got[slot] = *r;
        } else {
          errors[slot] = r.error().message;
        }
        ++answered;
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(answered.load(), threads * per_thread);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(errors[i], "") << i;
    EXPECT_EQ(got[i], want[i]) << "prompt " << i;  // each answer is its own prompt's, none swapped
  }
  const auto metrics = s->Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
}

TEST(EndpointRemoteBackendTest, ApiKeyAndAKilledServerGiveOneLine) {
  const auto key_file = std::filesystem::temp_directory_path() / ("kvaudit_endpoint_key_" + std::to_string(::getpid()));
  std::ofstream(key_file) << "sk-local-test\n";
  auto s = ServeProcess::Start({"--kv", kF32, "--ctx", std::to_string(kCtx), "--api-key-file", key_file.string()});
  ASSERT_TRUE(s);
  auto spec = ParseEndpointSpec("http://127.0.0.1:" + std::to_string(s->port()));
  ASSERT_TRUE(spec.ok());
  auto wrong = RemoteBackend::Connect(*spec, "sk-wrong", Fast(), std::nullopt, Tok());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("/v1/models: HTTP 401: 'missing or wrong API key"), std::string::npos)
      << wrong.error().message;
  auto remote = Connect(*s, std::nullopt, "sk-local-test");
  ASSERT_TRUE(remote);
  auto ok = remote->Generate(Ids(kPrompts[0]), 4, SamplingParams{});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  s->child().Signal(SIGKILL);
  ASSERT_TRUE(s->child().WaitExit(10'000).has_value());
  auto gone = remote->Generate(Ids(kPrompts[0]), 4, SamplingParams{});
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("/v1/completions: cannot connect after 3 attempts"), std::string::npos)
      << gone.error().message;
  EXPECT_EQ(gone.error().message.find('\n'), std::string::npos);
  std::filesystem::remove(key_file);
}

}  // namespace
}  // namespace kvaudit
