#include "endpoint/dialect.h"

namespace kvaudit {
namespace {

using nlohmann::json;

// The one model entry's owned_by, "" when the listing has none.
std::string OwnedBy(const json& models) {
  if (!models.is_object() || !models.contains("data") || !models["data"].is_array() || models["data"].empty())
    return "";
  const json& first = models["data"][0];
  return first.is_object() && first.contains("owned_by") && first["owned_by"].is_string()
             ? first["owned_by"].get<std::string>()
             : "";
}

}  // namespace

const char* DialectName(Dialect d) {
  switch (d) {
    case Dialect::kKvaudit: return "kvaudit";
    case Dialect::kVllm: return "vllm";
    case Dialect::kLlamaServer: return "llama-server";
    case Dialect::kOpenAI: return "openai";
  }
  return "?";
}

const char* SupportName(Support s) { return s == Support::kYes ? "yes" : s == Support::kNo ? "no" : "unknown"; }

Expected<std::optional<Dialect>> ParseDialectFlag(std::string_view value) {
  if (value == "auto") return std::optional<Dialect>();
  for (Dialect d : {Dialect::kKvaudit, Dialect::kVllm, Dialect::kLlamaServer, Dialect::kOpenAI}) {
    if (value == DialectName(d)) return std::optional<Dialect>(d);
  }
  return BadInput("--dialect '" + std::string(value) +
                  "' is not a dialect; hint: auto, kvaudit, vllm, llama-server or openai");
}

// One row per dialect; docs/endpoints.md has the same table with links.
Capabilities CapabilitiesOf(Dialect d) {
  using S = Support;
  Capabilities c;
  switch (d) {
    case Dialect::kKvaudit:
      // docs/serve.md; src/serve/completion_request.h (kMaxLogprobs = 20, prompt_logprobs,
      // return_tokens_as_token_ids), /tokenize in llama-server's shape.
      c = {S::kYes, S::kYes, S::kYes, S::kYes, S::kYes, 20, "content", "logprobs-token-ids"};
      break;
    case Dialect::kVllm:
      // vllm/entrypoints/openai/protocol.py: CompletionRequest (seed, prompt_logprobs, echo,
      // return_tokens_as_token_ids), TokenizeCompletionRequest {prompt, add_special_tokens};
      // serving_engine.py _get_decoded_token ("token_id:<id>"). The top-k limit is the server's
      // --max-logprobs (20 unless the deployment changed it): unknown from here.
      c = {S::kYes, S::kYes, S::kYes, S::kYes, S::kYes, -1, "prompt", "logprobs-token-ids"};
      break;
    case Dialect::kLlamaServer:
      // tools/server/README.md: POST /tokenize {content, add_special}; POST /completion with
      // return_tokens (raw generated ids), seed and n_probs (no documented cap). No prompt
      // logprobs (echo on /v1/completions is refused: server-common.cpp "Only no echo is
      // supported"), but n_probs over a prefix with logit_bias teacher-forces one position.
      c = {S::kYes, S::kNo, S::kNo, S::kYes, S::kYes, -1, "content", "native-tokens"};
      c.prefix_logprobs = S::kYes;
      break;
    case Dialect::kOpenAI:
      // OpenAI API reference, legacy completions: logprobs up to 5, echo, seed (beta, "best
      // effort"); no tokenize endpoint and no token ids in responses.
      c = {S::kNo, S::kNo, S::kUnknown, S::kNo, S::kUnknown, 5, "", ""};
      break;
  }
  return c;
}

Expected<Dialect> DetectDialect(const std::optional<json>& models, const std::optional<json>& props,
                                const std::string& url, std::string* why) {
  const std::string owner = models ? OwnedBy(*models) : "";
  if (ModelsNameTheServer(models)) {
    if (why) *why = "GET /v1/models: owned_by '" + owner + "'";
    return owner == "kvaudit" ? Dialect::kKvaudit : owner == "vllm" ? Dialect::kVllm : Dialect::kLlamaServer;
  }
  if (props && props->is_object() && props->contains("default_generation_settings")) {
    if (why) *why = "GET /props: default_generation_settings";
    return Dialect::kLlamaServer;
  }
  return BadInput(url + ": cannot tell which server this is (/v1/models owned_by '" + owner + "'" +
                  (props ? ", /props without default_generation_settings" : ", no /props") +
                  "); hint: name it with --dialect kvaudit|vllm|llama-server|openai");
}

bool ModelsNameTheServer(const std::optional<json>& models) {
  const std::string owner = models ? OwnedBy(*models) : "";
  return owner == "kvaudit" || owner == "vllm" || owner == "llamacpp";
}

Expected<Dialect> DetectDialect(const HttpClient& client, std::string* why) {
  KV_ASSIGN_OR_RETURN(std::optional<json> models, client.GetIfPresent("/v1/models"));
  std::optional<json> props;
  if (!ModelsNameTheServer(models)) {
    KV_ASSIGN_OR_RETURN(props, client.GetIfPresent("/props"));
  }
  return DetectDialect(models, props, client.spec().Url(""), why);
}

}  // namespace kvaudit
