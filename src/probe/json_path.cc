#include "probe/json_path.h"

#include <algorithm>
#include <cstdint>

#include "base/json_text.h"

namespace kvaudit {

using nlohmann::json;

std::string QuoteJsonText(std::string_view s, size_t limit) {
  bool cut = false;
  if (s.size() > limit) {
    size_t n = limit;
    while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;
    s = s.substr(0, n);
    cut = true;
  }
  std::string q = JsonText(json(std::string(s)));
  if (cut) q.insert(q.size() - 1, "...");
  return q;
}

namespace {

bool IsCanonicalIndex(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  if (s.size() > 1 && s[0] == '0') return false;
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

Expected<std::vector<JsonPathStep>> ParsePointer(const std::string& path) {
  std::vector<JsonPathStep> steps;
  size_t pos = 1;  // past the leading '/'
  while (true) {
    const size_t slash = path.find('/', pos);
    const std::string raw = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    JsonPathStep step;
    step.kind = JsonPathStep::Kind::kPointerToken;
    for (size_t i = 0; i < raw.size(); ++i) {  // RFC 6901: ~1 is '/', ~0 is '~'
      if (raw[i] != '~') {
        step.key += raw[i];
      } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        step.key += raw[++i] == '0' ? '~' : '/';
      } else {
        return BadInput("JSON pointer " + QuoteJsonText(path) +
                        " has a '~' not followed by 0 or 1; hint: write ~0 for '~' and ~1 for '/'");
      }
    }
    steps.push_back(std::move(step));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return steps;
}

Expected<std::vector<JsonPathStep>> ParseDotted(const std::string& path) {
  auto bad = [&](const std::string& why) -> Error {
    return BadInput("JSON path " + QuoteJsonText(path) + " " + why +
                    "; hint: write a.b[0].c (dotted) or /a/b/0/c (JSON pointer, for keys with . or [)");
  };
  std::vector<JsonPathStep> steps;
  size_t i = 0;
  bool expect_key = true;  // at the start or after '.'
  while (i < path.size()) {
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) return bad("has a '[' without ']'");
      const std::string digits = path.substr(i + 1, close - i - 1);
      if (!IsCanonicalIndex(digits)) return bad("has [" + digits + "], not an array index");
      if (expect_key && !steps.empty()) return bad("has '.' right before '['");
      steps.push_back({JsonPathStep::Kind::kIndex, "", static_cast<size_t>(std::stoull(digits))});
      i = close + 1;
      expect_key = false;
    } else if (path[i] == '.') {
      if (expect_key) return bad("has an empty key");
      expect_key = true;
      ++i;
    } else {
      if (!expect_key) return bad("needs '.' between ']' and a key");
      size_t end = i;
      while (end < path.size() && path[end] != '.' && path[end] != '[' && path[end] != ']') ++end;
      if (end < path.size() && path[end] == ']') return bad("has a ']' without '['");
      steps.push_back({JsonPathStep::Kind::kKey, path.substr(i, end - i), 0});
      i = end;
      expect_key = false;
    }
  }
  if (expect_key && !steps.empty()) return bad("ends with '.'");
  return steps;
}

}  // namespace

Expected<std::vector<JsonPathStep>> ParseJsonPath(const std::string& path) {
  if (path.empty()) return std::vector<JsonPathStep>{};
  if (path[0] == '/') return ParsePointer(path);
  return ParseDotted(path);
}

const json* ResolveJsonPath(const json& root, const std::vector<JsonPathStep>& steps, std::string* why) {
  const json* cur = &root;
  for (size_t s = 0; s < steps.size(); ++s) {
    const JsonPathStep& step = steps[s];
    const std::string where = "step " + std::to_string(s + 1);
    const bool as_index =
        step.kind == JsonPathStep::Kind::kIndex || (step.kind == JsonPathStep::Kind::kPointerToken && cur->is_array());
    if (as_index) {
      size_t index = step.index;
      if (step.kind == JsonPathStep::Kind::kPointerToken) {
        if (!IsCanonicalIndex(step.key)) {
          *why = where + " " + QuoteJsonText(step.key) + " is not an index into an array";
          return nullptr;
        }
        index = static_cast<size_t>(std::stoull(step.key));
      }
      if (!cur->is_array()) {
        *why = where + " [" + std::to_string(index) + "] needs an array, found " + cur->type_name();
        return nullptr;
      }
      if (index >= cur->size()) {
        *why =
            where + " [" + std::to_string(index) + "] is past the end (" + std::to_string(cur->size()) + " elements)";
        return nullptr;
      }
      cur = &(*cur)[index];
    } else {
      if (!cur->is_object()) {
        *why = where + " " + QuoteJsonText(step.key) + " needs an object, found " + cur->type_name();
        return nullptr;
      }
      const auto it = cur->find(step.key);
      if (it == cur->end()) {
        *why = where + ": no key " + QuoteJsonText(step.key);
        return nullptr;
      }
      cur = &*it;
    }
  }
  return cur;
}

}  // namespace kvaudit
