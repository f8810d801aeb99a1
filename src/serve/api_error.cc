#include "serve/api_error.h"

#include <utility>

namespace kvaudit::serve {

nlohmann::json ApiError::ToJson() const {
  nlohmann::json error = {{"message", message}, {"type", type}};
  error["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  error["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", error}};
}

const nlohmann::json* RequestField(const nlohmann::json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

ApiError BadRequest(std::string code, std::string param, std::string message) {
  ApiError e;
  e.status = 400;
  e.code = std::move(code);
  e.param = std::move(param);
  e.message = std::move(message);
  return e;
}

ApiError ServerError(int status, std::string type, std::string code, std::string message) {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.code = std::move(code);
  e.message = std::move(message);
  return e;
}

}  // namespace kvaudit::serve
