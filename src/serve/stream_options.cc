#include "serve/stream_options.h"

#include <string>

namespace kvaudit::serve {

bool ReadStreamOptions(const nlohmann::json& body, StreamOptions* out, ApiError* error) {
  if (const nlohmann::json* s = RequestField(body, "stream")) {
    if (!s->is_boolean()) return *error = BadRequest("invalid_type", "stream", "'stream' must be true or false"), false;
    out->stream = s->get<bool>();
  }
  const nlohmann::json* options = RequestField(body, "stream_options");
  if (options) {
    if (!out->stream) {
      return *error = BadRequest("invalid_value", "stream_options",
                                 "'stream_options' is only allowed with 'stream': true; hint: drop it or set stream"),
             false;
    }
    if (!options->is_object()) {
      return *error = BadRequest("invalid_type", "stream_options", "'stream_options' must be an object"), false;
    }
    if (const nlohmann::json* u = RequestField(*options, "include_usage")) {
      if (!u->is_boolean()) {
        return *error =
                   BadRequest("invalid_type", "stream_options", "'stream_options.include_usage' must be true or false"),
               false;
      }
      out->include_usage = u->get<bool>();
    }
  }
  if (!out->stream) return true;
  for (const char* name : {"logprobs", "prompt_logprobs", "echo"}) {
    const nlohmann::json* v = RequestField(body, name);
    if (!v || (v->is_boolean() && !v->get<bool>())) continue;  // chat's logprobs: false, echo: false
    return *error = BadRequest("unsupported_value", name,
                               std::string("'") + name + "' with 'stream' is not built yet; hint: omit one of them"),
           false;
  }
  return true;
}

}  // namespace kvaudit::serve
