#include "endpoint/remote_backend.h"

#include <charconv>

namespace kvaudit {
namespace {

using nlohmann::json;

Error Malformed(const HttpClient& c, const std::string& path, const std::string& what, const std::string& hint) {
  return BadInput(c.spec().Url(path) + ": " + what + "; hint: " + hint);
}

// The first choice of an OpenAI completion object, or nullptr.
const json* FirstChoice(const json& reply) {
  if (!reply.is_object() || !reply.contains("choices") || !reply["choices"].is_array() || reply["choices"].empty())
    return nullptr;
  const json& c = reply["choices"][0];
  return c.is_object() ? &c : nullptr;
}

// "token_id:<id>" (vLLM's format for return_tokens_as_token_ids) -> id.
std::optional<int32_t> TokenIdString(const json& t) {
  if (!t.is_string()) return std::nullopt;
  const std::string& s = t.get_ref<const std::string&>();
  const std::string prefix = "token_id:";
  if (s.rfind(prefix, 0) != 0) return std::nullopt;
  int32_t id = -1;
  const auto [end, ec] = std::from_chars(s.data() + prefix.size(), s.data() + s.size(), id);
  if (ec != std::errc() || end != s.data() + s.size() || id < 0) return std::nullopt;
  return id;
}

// The sampling fields every dialect reads; all sent, because servers' defaults differ.
void AddSampling(json& body, const SamplingParams& p, Dialect d) {
  body["temperature"] = p.temperature <= 0 ? 0.0 : static_cast<double>(p.temperature);
  body["top_p"] = static_cast<double>(p.top_p);
  body["seed"] = p.seed;
  if (d == Dialect::kOpenAI) return;  // OpenAI's API has no top_k or min_p (refused before this)
  // vLLM and kvaudit: top_k -1 is off; llama-server: 0 is off (README "top_k").
  body["top_k"] = p.top_k > 0 ? p.top_k : (d == Dialect::kLlamaServer ? 0 : -1);
  body["min_p"] = static_cast<double>(p.min_p);
}

}  // namespace

RemoteBackend::RemoteBackend(HttpClient client, Dialect dialect, std::string detection, std::string model_id,
                             const Tokenizer& tok)
    : client_(std::move(client)),
      dialect_(dialect),
      caps_(CapabilitiesOf(dialect)),
      detection_(std::move(detection)),
      model_id_(std::move(model_id)),
      tok_(tok) {}

Expected<std::unique_ptr<RemoteBackend>> RemoteBackend::Connect(EndpointSpec spec, std::string api_key,
                                                                HttpOptions http, std::optional<Dialect> forced,
                                                                const Tokenizer& tokenizer) {
  HttpClient client(std::move(spec), std::move(api_key), http);
  KV_ASSIGN_OR_RETURN(std::optional<json> models, client.GetIfPresent("/v1/models"));
  std::string model_id;
  if (models && models->is_object() && models->contains("data") && (*models)["data"].is_array() &&
      !(*models)["data"].empty() && (*models)["data"][0].is_object() && (*models)["data"][0].contains("id") &&
      (*models)["data"][0]["id"].is_string()) {
    model_id = (*models)["data"][0]["id"];
  }
  Dialect dialect = Dialect::kOpenAI;
  std::string why;
  if (forced) {
    dialect = *forced;
    why = std::string("--dialect ") + DialectName(dialect);
  } else {
    std::optional<json> props;  // asked only when /v1/models does not name the server
    if (!ModelsNameTheServer(models)) {
      KV_ASSIGN_OR_RETURN(props, client.GetIfPresent("/props"));
    }
    KV_ASSIGN_OR_RETURN(dialect, DetectDialect(models, props, client.spec().Url(""), &why));
  }
  return std::unique_ptr<RemoteBackend>(new RemoteBackend(std::move(client), dialect, why, model_id, tokenizer));
}

std::vector<float> RemoteBackend::ForcedLogits(std::span<const int32_t>, std::span<const int32_t>) {
  KV_CHECK_MSG(false, "RemoteBackend has no full logits (has_full_logits() is false); use PromptLogprobs");
  return {};
}

Expected<std::vector<int32_t>> RemoteBackend::Generate(std::span<const int32_t> prompt, int max_tokens,
                                                       const SamplingParams& params) {
  if (max_tokens <= 0) return std::vector<int32_t>();
  if (dialect_ == Dialect::kOpenAI && (params.top_k > 0 || params.min_p > 0)) {
    return BadInput(client_.spec().Url("/v1/completions") +
                    ": the openai dialect has no top_k or min_p; hint: sample with temperature and top_p only");
  }
  return dialect_ == Dialect::kLlamaServer ? GenerateLlamaNative(prompt, max_tokens, params)
                                           : GenerateCompletions(prompt, max_tokens, params);
}

Expected<std::vector<int32_t>> RemoteBackend::GenerateCompletions(std::span<const int32_t> prompt, int max_tokens,
                                                                  const SamplingParams& params) {
  const std::string path = "/v1/completions";
  json body = {{"prompt", std::vector<int32_t>(prompt.begin(), prompt.end())}, {"max_tokens", max_tokens}};
  if (!model_id_.empty()) body["model"] = model_id_;
  AddSampling(body, params, dialect_);
  const bool ids_back = caps_.ids_from == "logprobs-token-ids";
  if (ids_back) {
    body["logprobs"] = 0;  // the sampled token's own entry only
    body["return_tokens_as_token_ids"] = true;
  }
  KV_ASSIGN_OR_RETURN(json reply, client_.Post(path, body));
  const json* choice = FirstChoice(reply);
  if (!choice) return Malformed(client_, path, "the answer has no choices[0]", "is this an OpenAI-compatible server?");
  std::vector<int32_t> ids;
  if (ids_back) {
    const json* tokens =
        choice->contains("logprobs") && (*choice)["logprobs"].is_object() && (*choice)["logprobs"].contains("tokens")
            ? &(*choice)["logprobs"]["tokens"]
            : nullptr;
    if (!tokens || !tokens->is_array()) {
      return Malformed(client_, path, "choices[0].logprobs.tokens is missing",
                       "the server ignored logprobs; pass --dialect");
    }
    for (size_t i = 0; i < tokens->size(); ++i) {
      const std::optional<int32_t> id = TokenIdString((*tokens)[i]);
      if (!id) {
        return Malformed(client_, path, "choices[0].logprobs.tokens[" + std::to_string(i) + "] is not 'token_id:<id>'",
                         "the server ignored return_tokens_as_token_ids; pass --dialect openai");
      }
      ids.push_back(*id);
    }
  } else {
    if (!choice->contains("text") || !(*choice)["text"].is_string()) {
      return Malformed(client_, path, "choices[0].text is missing", "is this an OpenAI-compatible server?");
    }
    ids = Retokenize((*choice)["text"].get<std::string>());
  }
  DropEos(ids);
  if (static_cast<int>(ids.size()) > max_tokens) {
    return Malformed(client_, path,
                     std::to_string(ids.size()) + " tokens back for max_tokens " + std::to_string(max_tokens),
                     "the server does not honour max_tokens; pass --dialect");
  }
  return ids;
}

// llama-server's native endpoint: the sampler chain set to ours (temperature, top-k, top-p, min-p:
// run/sampling.h) so no default sampler (dry, typ_p, xtc, penalties) runs, and cache_prompt off
// (the README warns reuse can change logits).
Expected<std::vector<int32_t>> RemoteBackend::GenerateLlamaNative(std::span<const int32_t> prompt, int max_tokens,
                                                                  const SamplingParams& params) {
  const std::string path = "/completion";
  json body = {{"prompt", std::vector<int32_t>(prompt.begin(), prompt.end())},
               {"n_predict", max_tokens},
               {"return_tokens", true},
               {"cache_prompt", false},
               {"stream", false},
               {"samplers", {"temperature", "top_k", "top_p", "min_p"}},
               {"repeat_penalty", 1.0}};
  AddSampling(body, params, dialect_);
  KV_ASSIGN_OR_RETURN(json reply, client_.Post(path, body));
  if (!reply.is_object() || !reply.contains("content") || !reply["content"].is_string()) {
    return Malformed(client_, path, "the answer has no 'content'", "is this llama-server? pass --dialect");
  }
  std::vector<int32_t> ids;
  const json tokens = reply.value("tokens", json::array());
  if (tokens.is_array() && !tokens.empty()) {
    for (const json& t : tokens) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0)
        return Malformed(client_, path, "'tokens' holds a non-id", "pass --dialect");
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  } else {
    ids = Retokenize(reply["content"].get<std::string>());
  }
  DropEos(ids);
  return ids;
}

std::vector<int32_t> RemoteBackend::Retokenize(const std::string& text) {
  if (text.empty()) return {};
  retokenized_ = true;
  return tok_.Encode(text, /*add_bos=*/false);
}

void RemoteBackend::DropEos(std::vector<int32_t>& ids) const {
  const int32_t eos = tok_.eos_id();
  if (eos >= 0 && !ids.empty() && ids.back() == eos) ids.pop_back();
}

}  // namespace kvaudit
