// The JSON answer of POST /v1/completions (pure: from a CompletionOutput and the tokenizer). Shape:
// OpenAI's legacy completion object (id, object "text_completion", created, model, choices[{index,
// text, logprobs {tokens, token_logprobs, top_logprobs, text_offset}, finish_reason}], usage), as
// vLLM's CompletionResponse/CompletionLogProbs have it, plus vLLM's choices[0].prompt_logprobs
// ([null, {"<id>": {logprob, rank, decoded_token}}, ...]). docs/serve.md cites each.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/completion.h"
#include "serve/completion_request.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit::serve {

struct ResponseIds {
  std::string id;       // "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;    // the served model's id (GET /v1/models)
};

nlohmann::json CompletionResponse(const CompletionRequest& request, const CompletionOutput& output,
                                  const Tokenizer& tokenizer, const ResponseIds& ids);

// JSON text that never throws: invalid UTF-8 (a token cut inside a character) becomes U+FFFD.
std::string DumpJson(const nlohmann::json& j);

}  // namespace kvaudit::serve
