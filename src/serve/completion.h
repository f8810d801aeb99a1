// One completion run on one worker's cache: the prompt's teacher-forced logprobs when asked for,
// then generation by the engine's own CacheGenerator (run/cache_generator.h), so a greedy
// completion is token for token what `kvaudit generate` prints under the same --kv. Logprobs are
// the model's log-softmax of the raw logits (before temperature and the top-k/top-p/min-p filters,
// as vLLM returns them by default), computed as run/log_softmax.h computes NLL: double LogSumExp.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"
#include "run/cache_generator.h"
#include "serve/completion_request.h"

namespace kvaudit::serve {

// One position's distribution: the token there and its logprob, its rank (1 = most likely; one
// plus the number of tokens with a strictly larger logit), and the top k (token, logprob), most
// likely first, ties to the lower id.
struct PositionLogprobs {
  int32_t token = 0;
  double logprob = 0;
  int64_t rank = 1;
  std::vector<std::pair<int32_t, double>> top;
};

PositionLogprobs LogprobsAt(std::span<const float> logits, int32_t token, int k);

struct CompletionOutput {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated;                    // every sampled token (a stop string's last token included)
  std::string text;                                  // the generated text, cut before a stop string
  std::string finish_reason = "length";              // "stop": EOS or a stop string; "length": max_tokens
  std::vector<PositionLogprobs> generated_logprobs;  // [generated] when request.logprobs
  std::vector<PositionLogprobs> prompt_logprobs;  // [prompt - 1], positions 1.. when echo+logprobs or prompt_logprobs
  bool cancelled = false;                         // stopped by `cancel` (timeout, shutdown): not a result
};

// What a run reports besides its output (both optional). on_token: after every generated token
// that does not end the run, with the output so far (streaming, serve/job.cc). step_logits: the
// logits each generated token was sampled from, [generated, vocab] (the shadow monitor's served
// side, serve/shadow.h).
struct CompletionHooks {
  std::function<void(const CompletionOutput&)> on_token;
  std::vector<float>* step_logits = nullptr;
};

// prompt_ids: the tokenized prompt, already checked (CheckAgainstModel). cancel is polled after
// every generated token; true stops the run with cancelled set.
CompletionOutput RunCompletion(const Model& model, CacheGenerator& generator, const CompletionRequest& request,
                               std::vector<int32_t> prompt_ids, const std::function<bool()>& cancel,
                               const CompletionHooks& hooks = {});

}  // namespace kvaudit::serve
