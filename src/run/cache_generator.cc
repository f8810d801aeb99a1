#include "run/cache_generator.h"

#include <cstring>

#include "base/status.h"

namespace kvaudit {

CacheGenerator::CacheGenerator(const Model& model, KvCache& cache, ThreadPool& pool, int context)
    : model_(model), cache_(cache), forward_(model, cache, pool, context) {}

std::vector<int32_t> CacheGenerator::Generate(std::span<const int32_t> prompt, int max_tokens,
                                              const SamplingParams& params, std::vector<float>* step_logits) {
  if (step_logits) step_logits->clear();
  return Generate(prompt, max_tokens, params, [step_logits](std::span<const float> logits, int32_t) {
    if (step_logits) step_logits->insert(step_logits->end(), logits.begin(), logits.end());
    return true;
  });
}

std::vector<int32_t> CacheGenerator::Generate(std::span<const int32_t> prompt, int max_tokens,
                                              const SamplingParams& params, const StepFn& on_step) {
  KV_CHECK(!prompt.empty() && max_tokens >= 0);
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  const Tokenizer* tok = model_.tokenizer();
  const int32_t eos = tok ? tok->eos_id() : -1;
  std::vector<float> logits(vocab);  // [vocab] of the last position
  cache_.Reset();
  forward_.Run(prompt, 0, logits.data(), /*all_logits=*/false);
  Sampler sampler(params);
  std::vector<int32_t> out;
  int pos = static_cast<int>(prompt.size());
  while (static_cast<int>(out.size()) < max_tokens) {
    const int32_t next = sampler.Sample(logits);
    if (next == eos) break;
    out.push_back(next);
    if (on_step && !on_step(logits, next)) break;
    if (static_cast<int>(out.size()) == max_tokens) break;  // its logits are not needed
    const int32_t one[1] = {next};
    forward_.Run(one, pos++, logits.data(), false);
  }
  return out;
}

std::vector<float> CacheGenerator::PrefillLogits(std::span<const int32_t> prompt) {
  KV_CHECK(!prompt.empty());
  std::vector<float> out(prompt.size() * static_cast<size_t>(model_.config().vocab_size));  // [prompt, vocab]
  cache_.Reset();
  forward_.Run(prompt, 0, out.data(), /*all_logits=*/true);
  return out;
}

std::vector<float> CacheGenerator::ForcedLogits(std::span<const int32_t> prompt,
                                                std::span<const int32_t> continuation) {
  KV_CHECK(!prompt.empty());
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size), n = continuation.size();
  std::vector<float> out(n * vocab);  // [n, vocab]
  if (n == 0) return out;
  cache_.Reset();
  // Logits of prompt's last token predict continuation[0]; then continuation[0..n-1) in one pass.
  forward_.Run(prompt, 0, out.data(), false);
  if (n > 1) {
    forward_.Run(continuation.first(n - 1), static_cast<int>(prompt.size()), out.data() + vocab, /*all_logits=*/true);
  }
  return out;
}

}  // namespace kvaudit
