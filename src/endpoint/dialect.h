// Which server an endpoint is, and what it can answer (docs/endpoints.md "Dialects"). Detection
// reads only what a server says about itself, never a guess from behaviour:
//   GET /v1/models  data[0].owned_by  "kvaudit" -> kvaudit serve (src/serve/server.cc)
//                                     "vllm"    -> vLLM (vllm/entrypoints/openai/protocol.py ModelCard)
//                                     "llamacpp" -> llama-server (tools/server/server.cpp)
//   otherwise GET /props answering a JSON object with default_generation_settings -> llama-server
//   (tools/server/README.md "GET /props"); anything else is refused with a hint to pass --dialect.
// --dialect openai names an OpenAI-compatible server of unknown make: only what OpenAI's API
// reference documents is assumed, the rest is unknown.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "endpoint/http_client.h"

namespace kvaudit {

enum class Dialect { kKvaudit, kVllm, kLlamaServer, kOpenAI };

// "kvaudit", "vllm", "llama-server", "openai".
const char* DialectName(Dialect d);
// --dialect: "auto" -> nullopt (detect), else the dialect; anything else is one line with the choices.
Expected<std::optional<Dialect>> ParseDialectFlag(std::string_view value);

enum class Support { kYes, kNo, kUnknown };
const char* SupportName(Support s);  // "yes", "no", "unknown"

// What a dialect answers, from its documentation (the table in dialect.cc cites each row).
struct Capabilities {
  Support tokenize = Support::kUnknown;         // a /tokenize endpoint (shape: tokenize_shape)
  Support prompt_logprobs = Support::kUnknown;  // vLLM's prompt_logprobs: k on /v1/completions
  Support echo_logprobs = Support::kUnknown;    // echo: true with logprobs over the prompt
  Support token_ids = Support::kUnknown;        // generated token ids read back exactly
  Support seed = Support::kUnknown;             // a seed reproduces a sampled completion
  int max_top_logprobs = -1;                    // the most top-k logprobs per position; -1 unknown
  // Body of /tokenize: "content" ({content, add_special}: llama-server, kvaudit) or "prompt"
  // ({prompt, add_special_tokens}: vLLM); "" without one.
  std::string tokenize_shape;
  // How generated ids come back: "logprobs-token-ids" (return_tokens_as_token_ids), "native-tokens"
  // (llama-server /completion return_tokens), "" (only text: re-tokenized locally).
  std::string ids_from;
  // Teacher forcing one position per request where prompt logprobs are missing: n_probs over the
  // prefix, the next token forced (llama-server's /completion; endpoint/remote_prefix_scoring.cc).
  Support prefix_logprobs = Support::kNo;
};

Capabilities CapabilitiesOf(Dialect d);

// Detection from the bodies (pure, for tests): models = GET /v1/models's JSON (nullopt when absent),
// props = GET /props's JSON (nullopt when absent). why gets the evidence used, for the run's log.
Expected<Dialect> DetectDialect(const std::optional<nlohmann::json>& models, const std::optional<nlohmann::json>& props,
                                const std::string& url, std::string* why);

// Whether GET /v1/models's answer alone names the server (then /props need not be asked).
bool ModelsNameTheServer(const std::optional<nlohmann::json>& models);

// Asks the server (GET /v1/models, then GET /props only when needed).
Expected<Dialect> DetectDialect(const HttpClient& client, std::string* why);

}  // namespace kvaudit
