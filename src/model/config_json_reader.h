// The typed reader of a transformers config.json that model/config.cc and model/config_layers.cc
// share: every missing or mistyped key is one BadInput line naming it. Internal to model/.
#pragma once

#include <climits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"

namespace kvaudit {

using Json = nlohmann::json;

struct JsonReader {
  const Json& j;
  const std::string& path;
  Error Missing(const std::string& key) const {
    return BadInput(path + ": missing key '" + key +
                    "'; hint: is this a transformers config.json of a "
                    "llama/mistral/qwen2/qwen3/qwen3_moe/mixtral/phi3/gemma2/gemma3/gpt_oss "
                    "model?");
  }
  Error Invalid(const std::string& key, const std::string& want) const {
    return BadInput(path + ": key '" + key + "' must be " + want + "; hint: fix config.json");
  }
  bool Present(const Json& o, const std::string& key) const { return o.contains(key) && !o.at(key).is_null(); }
  Expected<int> Int(const Json& o, const std::string& key, std::optional<int> def = std::nullopt) const {
    if (!Present(o, key)) {
      if (def) return *def;
      return Missing(key);
    }
    const Json& v = o.at(key);
    if (!v.is_number_integer()) return Invalid(key, "an integer");
    const int64_t x = v.get<int64_t>();
    if (x < INT32_MIN || x > INT32_MAX) return Invalid(key, "a 32-bit integer");
    return static_cast<int>(x);
  }
  Expected<double> Num(const Json& o, const std::string& key, std::optional<double> def = std::nullopt) const {
    if (!Present(o, key)) {
      if (def) return *def;
      return Missing(key);
    }
    const Json& v = o.at(key);
    if (!v.is_number()) return Invalid(key, "a number");
    return v.get<double>();
  }
  Expected<bool> Bool(const Json& o, const std::string& key, bool def) const {
    if (!Present(o, key)) return def;
    if (!o.at(key).is_boolean()) return Invalid(key, "true or false");
    return o.at(key).get<bool>();
  }
  // bos/eos ids: an integer, a list (first entry), or null.
  Expected<int> TokenId(const std::string& key) const {
    if (!Present(j, key)) return -1;
    const Json& v = j.at(key);
    if (v.is_number_integer()) return static_cast<int>(v.get<int64_t>());
    if (v.is_array() && !v.empty() && v[0].is_number_integer()) return static_cast<int>(v[0].get<int64_t>());
    return Invalid(key, "an integer or a list of integers");
  }
};

}  // namespace kvaudit
