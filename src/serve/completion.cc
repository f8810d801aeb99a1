#include "serve/completion.h"

#include <algorithm>
#include <random>

#include "run/topk_row.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::serve {
namespace {

// The first stop string in text at or after `from`, as (position, found).
size_t FindStop(const std::string& text, const std::vector<std::string>& stops, size_t from) {
  size_t best = std::string::npos;
  for (const std::string& s : stops) best = std::min(best, text.find(s, from));
  return best;
}

// Positions 1..n-1 of the prompt, teacher-forced on this worker's cache.
std::vector<PositionLogprobs> PromptLogprobs(CacheGenerator& generator, const std::vector<int32_t>& ids, int k,
                                             size_t vocab) {
  std::vector<PositionLogprobs> out;
  if (ids.size() < 2) return out;
  const std::span<const int32_t> all(ids);
  const std::vector<float> logits = generator.ForcedLogits(all.first(1), all.subspan(1));  // [n-1, vocab]
  for (size_t i = 1; i < ids.size(); ++i) {
    out.push_back(LogprobsAt(std::span<const float>(logits).subspan((i - 1) * vocab, vocab), ids[i], k));
  }
  return out;
}

}  // namespace

PositionLogprobs LogprobsAt(std::span<const float> logits, int32_t token, int k) {
  TopKRow row = TopKRowOf(logits, token, k);
  PositionLogprobs p;
  p.token = row.token, p.logprob = row.logprob, p.top = std::move(row.top);
  const float mine = logits[static_cast<size_t>(token)];
  p.rank = 1 + std::count_if(logits.begin(), logits.end(), [mine](float x) { return x > mine; });
  return p;
}

CompletionOutput RunCompletion(const Model& model, CacheGenerator& generator, const CompletionRequest& request,
                               std::vector<int32_t> prompt_ids, const std::function<bool()>& cancel,
                               const CompletionHooks& hooks) {
  CompletionOutput out;
  out.prompt_ids = std::move(prompt_ids);
  const Tokenizer* tok = model.tokenizer();
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  const bool want_prompt = request.prompt_logprobs || (request.echo && request.logprobs);
  if (want_prompt) {
    const int k = std::max(request.prompt_logprobs.value_or(0), request.logprobs.value_or(0));
    out.prompt_logprobs = PromptLogprobs(generator, out.prompt_ids, k, vocab);
  }
  if (cancel()) return out.cancelled = true, out;
  if (request.max_tokens == 0) return out;
  SamplingParams params = request.sampling;
  if (!request.seeded) params.seed = std::random_device{}() * 0x100000001ull + std::random_device{}();
  bool stopped = false;
  size_t scanned = 0;  // text bytes already searched for stop strings
  std::string text;
  std::vector<float>* served = hooks.step_logits;
  out.generated =
      generator.Generate(out.prompt_ids, request.max_tokens, params, [&](std::span<const float> logits, int32_t token) {
        out.generated.push_back(token);  // the running copy the stop search decodes
        if (served) served->insert(served->end(), logits.begin(), logits.end());
        if (request.logprobs) out.generated_logprobs.push_back(LogprobsAt(logits, token, *request.logprobs));
        if (!request.stop.empty() && tok) {
          text = tok->Decode(out.generated);
          // A stop string may straddle tokens: search from where the longest one could start.
          const size_t from = scanned > kMaxStopBytes ? scanned - kMaxStopBytes : 0;
          const size_t at = FindStop(text, request.stop, from);
          scanned = text.size();
          if (at != std::string::npos) return text.resize(at), stopped = true, false;
        }
        if (cancel()) return out.cancelled = true, false;
        if (hooks.on_token) hooks.on_token(out);
        return true;
      });
  if (!stopped && tok) text = tok->Decode(out.generated);
  out.text = std::move(text);
  out.finish_reason = stopped || static_cast<int>(out.generated.size()) < request.max_tokens ? "stop" : "length";
  return out;
}

}  // namespace kvaudit::serve
