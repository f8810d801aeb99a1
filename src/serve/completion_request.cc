#include "serve/completion_request.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvaudit::serve {
namespace {

using nlohmann::json;

ApiError WrongType(const std::string& name, const std::string& want) {
  return BadRequest("invalid_type", name, "'" + name + "' must be " + want);
}

ApiError OutOfRange(const std::string& name, const std::string& range) {
  return BadRequest("invalid_value", name, "'" + name + "' must be " + range);
}

// Reads an integer field in [lo, hi] into *out (left as it is when absent).
template <class Int>
bool ReadInt(const json& body, const char* name, int64_t lo, int64_t hi, Int* out, ApiError* error) {
  const json* v = RequestField(body, name);
  if (!v) return true;
  if (!v->is_number_integer()) return *error = WrongType(name, "an integer"), false;
  const bool in_range = v->is_number_unsigned() ? v->get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                : v->get<int64_t>() >= lo && v->get<int64_t>() <= hi;
  if (!in_range) {
    return *error = OutOfRange(name, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"), false;
  }
  *out = static_cast<Int>(v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>());
  return true;
}

std::string Short(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", x);
  return buf;
}

bool ReadFloat(const json& body, const char* name, double lo, double hi, float* out, ApiError* error) {
  const json* v = RequestField(body, name);
  if (!v) return true;
  if (!v->is_number()) return *error = WrongType(name, "a number"), false;
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) {
    return *error = OutOfRange(name, "in [" + Short(lo) + ", " + Short(hi) + "]"), false;
  }
  *out = static_cast<float>(x);
  return true;
}

bool ReadBool(const json& body, const char* name, bool* out, ApiError* error) {
  const json* v = RequestField(body, name);
  if (!v) return true;
  if (!v->is_boolean()) return *error = WrongType(name, "true or false"), false;
  *out = v->get<bool>();
  return true;
}

// "prompt": a string or one array of token ids. An array of strings or of arrays is a batch,
// which this server does not take (one prompt per request: docs/serve.md).
bool ReadPrompt(const json& body, CompletionRequest* r, ApiError* error) {
  const json* v = RequestField(body, "prompt");
  if (!v) return *error = BadRequest("missing_field", "prompt", "'prompt' is required"), false;
  if (v->is_string()) return r->prompt_text = v->get<std::string>(), true;
  if (!v->is_array()) return *error = WrongType("prompt", "a string or an array of token ids"), false;
  if (v->empty()) return *error = BadRequest("invalid_value", "prompt", "'prompt' is an empty array"), false;
  if ((*v)[0].is_string() || (*v)[0].is_array()) {
    return *error = BadRequest("invalid_value", "prompt",
                               "one prompt per request; hint: send each prompt in a request of its own"),
           false;
  }
  r->prompt_is_ids = true;
  for (const json& id : *v) {
    if (!id.is_number_integer()) return *error = WrongType("prompt", "a string or an array of token ids"), false;
    const bool fits = id.is_number_unsigned()
                          ? id.get<uint64_t>() <= std::numeric_limits<int32_t>::max()
                          : id.get<int64_t>() >= 0 && id.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!fits) return *error = OutOfRange("prompt", "token ids of the model's vocabulary"), false;
    r->prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return true;
}

bool ReadStop(const json& body, CompletionRequest* r, ApiError* error) {
  const json* v = RequestField(body, "stop");
  if (!v) return true;
  const json list = v->is_string() ? json::array({*v}) : *v;
  if (!list.is_array()) return *error = WrongType("stop", "a string or an array of strings"), false;
  if (list.size() > static_cast<size_t>(kMaxStops)) {
    return *error = OutOfRange("stop", "at most " + std::to_string(kMaxStops) + " strings"), false;
  }
  for (const json& s : list) {
    if (!s.is_string()) return *error = WrongType("stop", "a string or an array of strings"), false;
    const std::string text = s.get<std::string>();
    if (text.empty() || text.size() > kMaxStopBytes) {
      return *error = OutOfRange("stop", "strings of 1 to " + std::to_string(kMaxStopBytes) + " bytes"), false;
    }
    r->stop.push_back(text);
  }
  return true;
}

// Fields of the OpenAI API kvaudit serve does not implement (docs/serve.md "Not built yet"):
// accepted only at their neutral value, so a client relying on them gets a 400 rather than a
// silently different answer.
bool RefuseUnbuiltCompletionOptions(const json& body, ApiError* error) {
  const json* n = RequestField(body, "n");
  const json* best_of = RequestField(body, "best_of");
  if ((n && *n != 1) || (best_of && *best_of != 1)) {
    return *error = BadRequest("unsupported_value", n && *n != 1 ? "n" : "best_of",
                               "one choice per request; hint: send the request again for another sample"),
           false;
  }
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    const json* p = RequestField(body, name);
    if (p && (!p->is_number() || p->get<double>() != 0.0)) {
      return *error =
                 BadRequest("unsupported_value", name, std::string("'") + name + "' is not built yet; hint: omit it"),
             false;
    }
  }
  const json* bias = RequestField(body, "logit_bias");
  const json* suffix = RequestField(body, "suffix");
  if ((bias && !(bias->is_object() && bias->empty())) || suffix) {
    const char* name = suffix ? "suffix" : "logit_bias";
    return *error =
               BadRequest("unsupported_value", name, std::string("'") + name + "' is not built yet; hint: omit it"),
           false;
  }
  return true;
}

bool ReadSampling(const json& body, CompletionRequest* r, ApiError* error) {
  SamplingParams& s = r->sampling;
  s.temperature = 1.0f;  // OpenAI's and vLLM's default; 0 is greedy
  int top_k = 0;
  if (!ReadFloat(body, "temperature", 0.0, 2.0, &s.temperature, error) ||
      !ReadFloat(body, "top_p", 0.0, 1.0, &s.top_p, error) || !ReadFloat(body, "min_p", 0.0, 1.0, &s.min_p, error) ||
      !ReadInt(body, "top_k", -1, std::numeric_limits<int32_t>::max(), &top_k, error)) {
    return false;
  }
  if (s.top_p <= 0.0f) return *error = OutOfRange("top_p", "in (0, 1]"), false;
  s.top_k = top_k < 0 ? 0 : top_k;  // vLLM's -1 and our 0 both mean off
  const json* seed = RequestField(body, "seed");
  if (seed) {
    if (!seed->is_number_integer()) return *error = WrongType("seed", "an integer"), false;
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
    r->seeded = true;
  }
  return true;
}

bool ReadLogprobs(const json& body, CompletionRequest* r, ApiError* error) {
  int k = 0;
  if (RequestField(body, "logprobs")) {
    if (!ReadInt(body, "logprobs", 0, kMaxLogprobs, &k, error)) return false;
    r->logprobs = k;
  }
  if (RequestField(body, "prompt_logprobs")) {
    if (!ReadInt(body, "prompt_logprobs", 0, kMaxLogprobs, &k, error)) return false;
    r->prompt_logprobs = k;
  }
  // vLLM's return_tokens_as_token_ids (protocol.py CompletionRequest): exact ids for clients that
  // cannot re-tokenize text (endpoint/remote_backend.h).
  return ReadBool(body, "echo", &r->echo, error) &&
         ReadBool(body, "return_tokens_as_token_ids", &r->return_tokens_as_token_ids, error);
}

}  // namespace

std::optional<CompletionRequest> ParseCompletionRequest(std::string_view body, ApiError* error) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return *error = BadRequest("invalid_json", "", "the body is not valid JSON"), std::nullopt;
  if (!j.is_object()) return *error = BadRequest("invalid_type", "", "the body must be a JSON object"), std::nullopt;
  CompletionRequest r;
  if (const json* model = RequestField(j, "model")) {
    if (!model->is_string()) return *error = WrongType("model", "a string"), std::nullopt;
    r.model = model->get<std::string>();
  }
  if (const json* user = RequestField(j, "user"); user && !user->is_string()) {
    return *error = WrongType("user", "a string"), std::nullopt;
  }
  if (!ReadPrompt(j, &r, error) ||
      !ReadInt(j, "max_tokens", 0, std::numeric_limits<int32_t>::max(), &r.max_tokens, error) ||
      !ReadSampling(j, &r, error) || !ReadStop(j, &r, error) || !ReadLogprobs(j, &r, error) ||
      !RefuseUnbuiltCompletionOptions(j, error) || !ReadStreamOptions(j, &r.stream, error)) {
    return std::nullopt;
  }
  return r;
}

std::optional<ApiError> CheckAgainstModel(const CompletionRequest& request, size_t prompt_tokens, int32_t vocab,
                                          int ctx) {
  if (prompt_tokens == 0) return BadRequest("invalid_value", "prompt", "the prompt has no tokens");
  for (int32_t id : request.prompt_ids) {
    if (id >= vocab) {
      return BadRequest(
          "invalid_value", "prompt",
          "token id " + std::to_string(id) + " is not below the vocabulary size " + std::to_string(vocab));
    }
  }
  const int64_t total = static_cast<int64_t>(prompt_tokens) + request.max_tokens;
  if (total > ctx) {
    return BadRequest("context_length_exceeded", "max_tokens",
                      "the context is " + std::to_string(ctx) + " tokens, but the prompt (" +
                          std::to_string(prompt_tokens) + " tokens) and max_tokens (" +
                          std::to_string(request.max_tokens) + ") need " + std::to_string(total) +
                          "; hint: shorten the prompt or lower max_tokens");
  }
  return std::nullopt;
}

std::optional<TokenizeRequest> ParseTokenizeRequest(std::string_view body, ApiError* error) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return *error = BadRequest("invalid_json", "", "the body is not valid JSON"), std::nullopt;
  if (!j.is_object()) return *error = BadRequest("invalid_type", "", "the body must be a JSON object"), std::nullopt;
  TokenizeRequest r;
  const json* content = RequestField(j, "content");
  if (!content) return *error = BadRequest("missing_field", "content", "'content' is required"), std::nullopt;
  if (!content->is_string()) return *error = WrongType("content", "a string"), std::nullopt;
  r.content = content->get<std::string>();
  if (!ReadBool(j, "add_special", &r.add_special, error)) return std::nullopt;
  return r;
}

std::optional<std::vector<int32_t>> ParseDetokenizeRequest(std::string_view body, int32_t vocab, ApiError* error) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return *error = BadRequest("invalid_json", "", "the body is not valid JSON"), std::nullopt;
  if (!j.is_object()) return *error = BadRequest("invalid_type", "", "the body must be a JSON object"), std::nullopt;
  const json* tokens = RequestField(j, "tokens");
  if (!tokens) return *error = BadRequest("missing_field", "tokens", "'tokens' is required"), std::nullopt;
  if (!tokens->is_array()) return *error = WrongType("tokens", "an array of token ids"), std::nullopt;
  std::vector<int32_t> ids;
  for (const json& id : *tokens) {
    if (!id.is_number_integer()) return *error = WrongType("tokens", "an array of token ids"), std::nullopt;
    if (id.is_number_unsigned() ? id.get<uint64_t>() >= static_cast<uint64_t>(vocab)
                                : id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
      return *error = OutOfRange("tokens", "token ids in [0, " + std::to_string(vocab) + ")"), std::nullopt;
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

}  // namespace kvaudit::serve
