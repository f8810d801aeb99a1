// The body of POST /v1/completions, parsed and checked before anything runs (pure: no model, so
// the fuzz target tests/fuzz/serve_request_fuzz.cc and the unit tests call it directly). Fields
// and defaults follow OpenAI's legacy completions API and vLLM's CompletionRequest
// (vllm/entrypoints/openai/completion/protocol.py: top_k, min_p, prompt_logprobs); docs/serve.md
// lists each with its source and what is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/sampling.h"
#include "serve/api_error.h"
#include "serve/stream_options.h"

namespace kvaudit::serve {

// The most top logprobs a request may ask for (vLLM's default --max-logprobs is 20).
inline constexpr int kMaxLogprobs = 20;
// The most stop strings, and the longest one (bytes): bounds the per-token stop search.
inline constexpr int kMaxStops = 16;
inline constexpr size_t kMaxStopBytes = 256;

struct CompletionRequest {
  std::string model;                        // as sent ("" when absent); not checked against --model
  bool prompt_is_ids = false;               // prompt was an array of token ids
  std::string prompt_text;                  // when !prompt_is_ids
  std::vector<int32_t> prompt_ids;          // when prompt_is_ids (not yet checked against the vocabulary)
  int max_tokens = 16;                      // OpenAI's default
  SamplingParams sampling;                  // temperature 1 (OpenAI's default), top_p 1, top_k off, min_p 0
  bool seeded = false;                      // "seed" given; without it each request draws its own
  std::vector<std::string> stop;            // generation ends before the first of these in the text
  std::optional<int> logprobs;              // top-k logprobs per generated token
  bool echo = false;                        // the prompt's tokens come first in text and logprobs
  std::optional<int> prompt_logprobs;       // vLLM: top-k logprobs per prompt position
  StreamOptions stream;                     // stream, stream_options (serve/stream_options.h)
  bool return_tokens_as_token_ids = false;  // vLLM: logprobs tokens (and top keys) as "token_id:<id>"
};

// The request, or the 400 that answers it (error->status, message, code, param). Unknown fields
// are ignored, as vLLM and OpenAI's API do; a known field of the wrong type or out of range is an
// error naming it.
std::optional<CompletionRequest> ParseCompletionRequest(std::string_view body, ApiError* error);

// The checks that need the model: every token id in [0, vocab), a non-empty prompt, and
// prompt + max_tokens within ctx. nullopt when the request fits.
std::optional<ApiError> CheckAgainstModel(const CompletionRequest& request, size_t prompt_tokens, int32_t vocab,
                                          int ctx);

// POST /tokenize {content, add_special} and POST /detokenize {tokens} (llama-server's shapes).
struct TokenizeRequest {
  std::string content;
  bool add_special = false;  // llama-server's default: no BOS
};
std::optional<TokenizeRequest> ParseTokenizeRequest(std::string_view body, ApiError* error);
std::optional<std::vector<int32_t>> ParseDetokenizeRequest(std::string_view body, int32_t vocab, ApiError* error);

}  // namespace kvaudit::serve
