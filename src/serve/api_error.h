// The error every endpoint of `kvaudit serve` answers with, in OpenAI's shape (docs/serve.md
// "Errors"): HTTP status + {"error": {"message", "type", "param", "code"}}, as the OpenAI API
// reference's error object and vLLM's ErrorResponse have it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvaudit::serve {

struct ApiError {
  int status = 400;                            // HTTP status
  std::string message;                         // one line: what is wrong and how to fix it
  std::string type = "invalid_request_error";  // OpenAI's error type
  std::string code;                            // machine-readable reason ("invalid_type", ...)
  std::string param;                           // the request field at fault, "" for none

  nlohmann::json ToJson() const;
};

ApiError BadRequest(std::string code, std::string param, std::string message);
// A request field's value, nullptr when absent or null (OpenAI's clients send null for "not set").
const nlohmann::json* RequestField(const nlohmann::json& body, const char* name);
// Any other status (401, 503, 504, ...) with its OpenAI error type.
ApiError ServerError(int status, std::string type, std::string code, std::string message);

}  // namespace kvaudit::serve
