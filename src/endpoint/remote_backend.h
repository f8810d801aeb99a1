// A deployed server as a GenerationBackend (docs/endpoints.md): prompts go out as
// token ids from the local tokenizer (never text, so both sides see the same tokens), every
// sampling parameter is sent explicitly (servers' defaults differ: llama-server's top_k 40, top_p
// 0.95, min_p 0.05), and the generated ids come back exactly where the dialect can say them:
//   kvaudit, vLLM   POST /v1/completions with logprobs 0 and return_tokens_as_token_ids, each
//                   logprobs token "token_id:<id>" (vLLM serving_engine.py _get_decoded_token)
//   llama-server    POST /completion with return_tokens (tools/server/README.md); when the server
//                   leaves tokens empty, the text is re-tokenized locally (ids_retokenized())
//   openai          POST /v1/completions; the text re-tokenized locally (ids_retokenized())
// Re-tokenized ids are an approximation (a text can tokenize differently from how it was
// generated); the run reports it. A returned EOS id is dropped: the result ends before EOS, as
// CacheGenerator::Generate's does. Thread-safe: concurrent calls share only the HttpClient.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "endpoint/dialect.h"
#include "endpoint/endpoint_spec.h"
#include "endpoint/http_client.h"
#include "run/generation_backend.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {

// One prompt position's distribution as the server reports it (vLLM's prompt_logprobs entry).
struct PromptPositionLogprobs {
  int32_t token = 0;                            // the prompt's token at this position
  double logprob = 0;                           // its log-probability given the positions before
  int64_t rank = 1;                             // 1 = most likely
  std::vector<std::pair<int32_t, double>> top;  // [<= k] (id, logprob), most likely first, ties to the lower id
};

struct TokenizerCheck {
  bool checked = false;  // false: the server has no /tokenize (note says so)
  int samples = 0;
  int64_t tokens = 0;  // tokens compared
  std::string note;
};

class RemoteBackend final : public GenerationBackend {
 public:
  // Reads GET /v1/models (the served model's id, sent as "model") and detects the dialect unless
  // forced. tokenizer: the model's (EOS, and re-tokenizing text); it must outlive the backend.
  static Expected<std::unique_ptr<RemoteBackend>> Connect(EndpointSpec spec, std::string api_key, HttpOptions http,
                                                          std::optional<Dialect> forced, const Tokenizer& tokenizer);

  Expected<std::vector<int32_t>> Generate(std::span<const int32_t> prompt, int max_tokens,
                                          const SamplingParams& params) override;
  bool has_full_logits() const override { return false; }
  // Not available from an endpoint (has_full_logits() is false): calling it is a bug.
  std::vector<float> ForcedLogits(std::span<const int32_t> prompt, std::span<const int32_t> continuation) override;

  bool has_forced_top_k() const override {
    return caps_.prompt_logprobs == Support::kYes || caps_.prefix_logprobs == Support::kYes;
  }
  // The dialect's documented maximum, else 20 (vLLM's default --max-logprobs, kvaudit serve's).
  int max_top_k() const override { return caps_.max_top_logprobs > 0 ? caps_.max_top_logprobs : 20; }
  // PromptLogprobs over prompt + continuation, the rows predicting the continuation.
  Expected<std::vector<TopKRow>> ForcedTopK(std::span<const int32_t> prompt, std::span<const int32_t> continuation,
                                            int k) override;

  // Positions 1..n-1 of ids, teacher-forced by the server: [ids.size() - 1], via vLLM's
  // prompt_logprobs: k with max_tokens 1, or where the dialect has none but prefix_logprobs
  // (llama-server), one request per position from `first` on (the entries before it carry only
  // their token: their rows are not needed). An error where the dialect has neither.
  // reuse_prefix false (llama-server): every request evaluates its whole prefix in one batch
  // (cache_prompt off), so the numbers do not depend on what the slot held before, nor on the
  // order of requests (decode and batched prefill round differently: docs/endpoints.md).
  Expected<std::vector<PromptPositionLogprobs>> PromptLogprobs(std::span<const int32_t> ids, int k, size_t first = 0,
                                                               bool reuse_prefix = true) const;

  // Each sample tokenized here (with the model's BOS convention) and by the server's /tokenize
  // (add_special): BadInput naming the first differing token when they disagree.
  Expected<TokenizerCheck> CheckTokenizer(const Tokenizer& tokenizer, std::span<const std::string> samples) const;

  Dialect dialect() const { return dialect_; }
  const Capabilities& capabilities() const { return caps_; }
  const std::string& model_id() const { return model_id_; }
  const std::string& detection() const { return detection_; }  // why this dialect ("forced by --dialect", ...)
  const HttpClient& client() const { return client_; }
  // True once any Generate read its ids by re-tokenizing text (an approximation).
  bool ids_retokenized() const { return retokenized_.load(); }

 private:
  RemoteBackend(HttpClient client, Dialect dialect, std::string detection, std::string model_id, const Tokenizer& tok);
  Expected<std::vector<int32_t>> GenerateCompletions(std::span<const int32_t> prompt, int max_tokens,
                                                     const SamplingParams& params);
  Expected<std::vector<int32_t>> GenerateLlamaNative(std::span<const int32_t> prompt, int max_tokens,
                                                     const SamplingParams& params);
  // PromptLogprobs through one /completion per position (endpoint/remote_prefix_scoring.cc).
  Expected<std::vector<PromptPositionLogprobs>> PrefixLogprobs(std::span<const int32_t> ids, int k, size_t first,
                                                               bool reuse_prefix) const;
  std::vector<int32_t> Retokenize(const std::string& text);
  void DropEos(std::vector<int32_t>& ids) const;

  HttpClient client_;
  Dialect dialect_;
  Capabilities caps_;
  std::string detection_;
  std::string model_id_;
  const Tokenizer& tok_;
  std::atomic<bool> retokenized_{false};
};

}  // namespace kvaudit
