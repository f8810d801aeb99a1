// JSON paths of probe checks (docs/probes.md): a dotted path (a.b[0].c) or an RFC 6901 pointer
// (/a/b/0/c, for keys that hold '.' or '['), parsed once when a check is validated and resolved
// against the JSON value a generation produced.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace kvaudit {

// One step of a JSON path. Dotted keys select object members and [i] array elements; a JSON
// pointer token selects a member of an object or, on an array, the element its decimal index names.
struct JsonPathStep {
  enum class Kind { kKey, kIndex, kPointerToken } kind = Kind::kKey;
  std::string key;
  size_t index = 0;
};

// The steps of `path`; "" is the whole value (in both syntaxes). A malformed path is one line.
Expected<std::vector<JsonPathStep>> ParseJsonPath(const std::string& path);

// The element at `steps`, or nullptr with *why saying which step is missing.
const nlohmann::json* ResolveJsonPath(const nlohmann::json& root, const std::vector<JsonPathStep>& steps,
                                      std::string* why);

inline constexpr size_t kJsonQuoteLimit = 60;  // bytes of text shown in a description or detail

// JSON-style quoting (escapes newlines and quotes; invalid UTF-8 shown as U+FFFD), cut at a
// character boundary after `limit` bytes.
std::string QuoteJsonText(std::string_view s, size_t limit = kJsonQuoteLimit);

}  // namespace kvaudit
