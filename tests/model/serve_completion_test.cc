// One served completion on the bundled model, in process (src/serve/completion.h): its logprobs
// must be the engine's own numbers, bitwise: prompt logprobs = the log-softmax (run/log_softmax.h)
// of a teacher-forced forward pass over the prompt, generated tokens and their logprobs = what
// CacheGenerator::Generate produces and the logits it sampled from, under the same KV cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"
#include "run/cache_generator.h"
#include "run/kv_configs.h"
#include "run/log_softmax.h"
#include "serve/completion.h"
#include "serve/completion_response.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::serve {
namespace {

const Model& Bundled() { return testing::BundledModel(); }

const std::string kKv = "k=q4_0,v=q4_0";
const char* kText = "import numpy as np\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n";

std::vector<int32_t> PromptIds() {
  const Tokenizer& tok = *Bundled().tokenizer();
  return tok.Encode(kText, tok.add_bos_default());
}

TEST(ServeCompletionTest, PromptLogprobsAreBitwiseTheTeacherForcedLogSoftmax) {
  ThreadPool pool(2);
  const int ctx = 512;
  auto served = BuildCache(Bundled(), kKv, "", ctx, pool);
  ASSERT_TRUE(served.ok()) << served.error().message;
  CacheGenerator gen(Bundled(), *served->cache, pool);
  CompletionRequest req;
  req.max_tokens = 0;
  req.prompt_logprobs = 3;
  const std::vector<int32_t> ids = PromptIds();
  ASSERT_GT(ids.size(), 10u);
  const CompletionOutput out = RunCompletion(Bundled(), gen, req, ids, [] { return false; });
  ASSERT_EQ(out.prompt_logprobs.size(), ids.size() - 1);
  EXPECT_TRUE(out.generated.empty());
  // The reference: one forward pass over the whole prompt on a fresh cache of the same spec.
  auto ref_cache = BuildCache(Bundled(), kKv, "", ctx, pool);
  ASSERT_TRUE(ref_cache.ok());
  Forward forward(Bundled(), *ref_cache->cache, pool);
  const size_t vocab = static_cast<size_t>(Bundled().config().vocab_size);
  std::vector<float> logits(ids.size() * vocab);
  forward.Run(ids, 0, logits.data(), /*all_logits=*/true);
  for (size_t i = 1; i < ids.size(); ++i) {
    const std::span<const float> row(logits.data() + (i - 1) * vocab, vocab);
    const double lse = LogSumExp(row);
    const PositionLogprobs& p = out.prompt_logprobs[i - 1];
    EXPECT_EQ(p.token, ids[i]);
    EXPECT_EQ(p.logprob, -TokenNll(row, lse, ids[i])) << i;  // bitwise
    ASSERT_EQ(p.top.size(), 3u);
    EXPECT_EQ(p.top[0].first, Argmax(row)) << i;
    EXPECT_EQ(p.top[0].second, -TokenNll(row, lse, Argmax(row))) << i;
    EXPECT_GE(p.top[0].second, p.top[1].second);
    EXPECT_EQ(p.rank == 1, ids[i] == Argmax(row)) << i;
  }
}

TEST(ServeCompletionTest, GreedyTokensAndLogprobsAreTheGeneratorsOwn) {
  ThreadPool pool(2);
  auto a = BuildCache(Bundled(), kKv, "", 512, pool);
  auto b = BuildCache(Bundled(), kKv, "", 512, pool);
  ASSERT_TRUE(a.ok() && b.ok());
  CacheGenerator served(Bundled(), *a->cache, pool), reference(Bundled(), *b->cache, pool);
  CompletionRequest req;
  req.max_tokens = 12;
  req.sampling.temperature = 0;
  req.logprobs = 2;
  const std::vector<int32_t> ids = PromptIds();
  const CompletionOutput out = RunCompletion(Bundled(), served, req, ids, [] { return false; });
  std::vector<float> steps;
  const std::vector<int32_t> want = reference.Generate(ids, req.max_tokens, req.sampling, &steps);
  EXPECT_EQ(out.generated, want);
  EXPECT_EQ(out.text, Bundled().tokenizer()->Decode(want));
  EXPECT_EQ(out.finish_reason, static_cast<int>(want.size()) < req.max_tokens ? "stop" : "length");
  ASSERT_EQ(out.generated_logprobs.size(), want.size());
  const size_t vocab = static_cast<size_t>(Bundled().config().vocab_size);
  for (size_t i = 0; i < want.size(); ++i) {
    const std::span<const float> row(steps.data() + i * vocab, vocab);
    EXPECT_EQ(out.generated_logprobs[i].logprob, -TokenNll(row, LogSumExp(row), want[i])) << i;
    EXPECT_EQ(out.generated_logprobs[i].rank, 1) << i;  // greedy picks the top token
  }
}

TEST(ServeCompletionTest, CancelStopsAfterTheCurrentToken) {
  ThreadPool pool(2);
  auto c = BuildCache(Bundled(), kKv, "", 512, pool);
  ASSERT_TRUE(c.ok());
  CacheGenerator gen(Bundled(), *c->cache, pool);
  CompletionRequest req;
  req.max_tokens = 50;
  req.sampling.temperature = 0;
  int polls = 0;
  const CompletionOutput out = RunCompletion(Bundled(), gen, req, PromptIds(), [&] { return ++polls > 3; });
  EXPECT_TRUE(out.cancelled);
  EXPECT_EQ(out.generated.size(), 3u);  // poll 1 before generating, then after tokens 1, 2, 3
}

// The shadow monitor's served side (serve/shadow.h): the step logits recorded while generating
// are those the tokens were sampled from (recording changes no token), and the prefill run again
// with every position's logits ends in bitwise the row the first token was sampled from. On q4_0
// its rows and the steps' are also bitwise a teacher-forced pass over prompt + generated.
TEST(ServeCompletionTest, ShadowsServedLogitsAreExactlyWhatServingComputed) {
  ThreadPool pool(2);
  const int ctx = 512;
  auto served = BuildCache(Bundled(), kKv, "", ctx, pool);
  ASSERT_TRUE(served.ok()) << served.error().message;
  CacheGenerator gen(Bundled(), *served->cache, pool);
  CompletionRequest req;
  req.max_tokens = 20;
  req.sampling.temperature = 0;
  req.logprobs = 0;
  const std::vector<int32_t> ids = PromptIds();
  const CompletionOutput plain = RunCompletion(Bundled(), gen, req, ids, [] { return false; });
  std::vector<float> steps;
  CompletionHooks hooks;
  hooks.step_logits = &steps;
  const CompletionOutput recorded = RunCompletion(
      Bundled(), gen, req, ids, [] { return false; }, hooks);
  EXPECT_EQ(recorded.generated, plain.generated);
  ASSERT_FALSE(recorded.generated.empty());
  const size_t vocab = static_cast<size_t>(Bundled().config().vocab_size), g = recorded.generated.size();
  ASSERT_EQ(steps.size(), g * vocab);
  for (size_t i = 0; i < g; ++i) {  // each step's logits give the logprob the answer reported
    const auto row = std::span<const float>(steps).subspan(i * vocab, vocab);
    EXPECT_EQ(LogprobsAt(row, recorded.generated[i], 0).logprob, plain.generated_logprobs[i].logprob) << i;
  }
  const std::vector<float> prefill = gen.PrefillLogits(ids);  // [prompt, vocab]
  ASSERT_EQ(prefill.size(), ids.size() * vocab);
  EXPECT_TRUE(std::equal(prefill.end() - static_cast<std::ptrdiff_t>(vocab), prefill.end(), steps.begin()));
  std::vector<int32_t> all = ids;
  all.insert(all.end(), recorded.generated.begin(), recorded.generated.end());
  const std::span<const int32_t> tokens(all);
  const std::vector<float> forced = gen.ForcedLogits(tokens.first(1), tokens.subspan(1));  // [prompt + g - 1, vocab]
  const size_t p = ids.size() - 1;  // prompt rows predicting prompt[1..]
  EXPECT_TRUE(std::equal(prefill.begin(), prefill.begin() + static_cast<std::ptrdiff_t>(p * vocab), forced.begin()));
  EXPECT_TRUE(std::equal(steps.begin(), steps.end(), forced.begin() + static_cast<std::ptrdiff_t>(p * vocab)));
}

TEST(ServeCompletionTest, ReturnTokensAsTokenIdsWritesVllmsTokenIdStrings) {
  ThreadPool pool(2);
  auto cache = BuildCache(Bundled(), kKv, "", 512, pool);
  ASSERT_TRUE(cache.ok());
  CacheGenerator gen(Bundled(), *cache->cache, pool);
  CompletionRequest req;
  req.max_tokens = 6;
  req.sampling.temperature = 0;
  req.logprobs = 1;
  req.return_tokens_as_token_ids = true;
  const CompletionOutput out = RunCompletion(Bundled(), gen, req, PromptIds(), [] { return false; });
  ASSERT_FALSE(out.generated.empty());
  const nlohmann::json j = CompletionResponse(req, out, *Bundled().tokenizer(), {"cmpl-1", 0, "m"});
  const nlohmann::json& lp = j["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), out.generated.size());
  for (size_t i = 0; i < out.generated.size(); ++i) {
    const std::string name = "token_id:" + std::to_string(out.generated[i]);
    EXPECT_EQ(lp["tokens"][i], name) << i;
    EXPECT_TRUE(lp["top_logprobs"][i].contains(name)) << lp["top_logprobs"][i].dump();
  }
  req.return_tokens_as_token_ids = false;  // the default: the decoded piece
  const nlohmann::json text = CompletionResponse(req, out, *Bundled().tokenizer(), {"cmpl-2", 0, "m"});
  const int32_t first[1] = {out.generated[0]};
  EXPECT_EQ(text["choices"][0]["logprobs"]["tokens"][0], Bundled().tokenizer()->Decode(first, true));
}

}  // namespace
}  // namespace kvaudit::serve
