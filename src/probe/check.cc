#include "probe/check.h"

#include <algorithm>
#include <memory>
#include <variant>

#include "base/json_text.h"
#include "probe/json_path.h"
#include "tokenizer/pcre2_pattern.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {
namespace {

using nlohmann::json;

constexpr size_t kQuoteLimit = kJsonQuoteLimit;

// A probe's regex (tokenizer/pcre2_pattern.h: model output may hold invalid UTF-8, which matches
// nothing), with its own match data.
class Regex {
 public:
  static Expected<std::unique_ptr<Regex>> Compile(const std::string& pattern, const char* what) {
    auto compiled = Pcre2Pattern::Compile(pattern, /*jit=*/false);
    if (!compiled) {
      return BadInput(std::string(what) + " " + QuoteJsonText(pattern) + " " + compiled.error().message +
                      "; hint: write a PCRE2 pattern (JSON strings need \\\\ for one backslash)");
    }
    auto re = std::unique_ptr<Regex>(new Regex());
    re->pattern_ = std::move(compiled).value();
    re->data_ = pcre2_match_data_create_from_pattern(re->pattern_->code(), nullptr);
    return re;
  }
  ~Regex() { pcre2_match_data_free(data_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // 1 = found, 0 = not found, -1 = the matcher gave up (match or depth limit: reported, not a pass).
  int Search(std::string_view text) const {
    const int rc = pcre2_match(pattern_->code(), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, data_,
                               pattern_->context());
    if (rc >= 0) return 1;
    return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
  }

 private:
  Regex() = default;
  std::unique_ptr<Pcre2Pattern> pattern_;
  pcre2_match_data* data_ = nullptr;
};

std::string DumpShort(const json& j) {
  const std::string s = JsonText(j);
  return s.size() > kQuoteLimit ? s.substr(0, kQuoteLimit) + "..." : s;
}

// Parses the first JSON span strictly (RFC 8259: no comments, no trailing commas).
bool ParseFirstJson(const std::string& text, json* out, std::string* detail) {
  const auto span = FindFirstJsonSpan(text);
  if (!span) {
    const size_t open = text.find_first_of("{[");
    *detail = open == std::string::npos
                  ? "no JSON object or array in the output (no '{' or '[')"
                  : "the JSON value starting at byte " + std::to_string(open) + " is never closed";
    return false;
  }
  const std::string_view body(text.data() + span->begin, span->end - span->begin);
  try {
    *out = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    std::string what = e.what();
    const size_t tag_end = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    if (what.rfind("[json.", 0) == 0 && tag_end != std::string::npos) what = what.substr(tag_end + 2);
    *detail = "the JSON value at bytes " + std::to_string(span->begin) + ".." + std::to_string(span->end) +
              " does not parse: " + what;
    return false;
  }
  return true;
}

bool ContinuesWord(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

// kPrefix / kExactSpan: compares text[start..] with expected; on failure names the byte and token.
ProbeScore ScorePrefix(const ProbeCheck& check, std::span<const int32_t> ids, const std::string& text,
                       const Tokenizer& tokenizer, bool strip) {
  ProbeScore score;
  size_t start = 0;
  if (strip) {
    while (start < text.size() && (text[start] == ' ' || text[start] == '\t')) ++start;
  }
  const std::string& want = check.expected;
  size_t i = 0;
  while (i < want.size() && start + i < text.size() && text[start + i] == want[i]) ++i;
  size_t wrong_at;  // byte offset in text of the first byte that departs
  std::string why;
  if (i < want.size()) {
    wrong_at = start + i;
    const std::string_view got = std::string_view(text).substr(wrong_at);
    why = got.empty()
              ? "the output ends after " + std::to_string(i) + " of " + std::to_string(want.size()) + " expected bytes"
              : "departs from " + QuoteJsonText(want) + " at expected byte " + std::to_string(i) + ": got " +
                    QuoteJsonText(got, 20);
  } else if (strip && start + i < text.size() && ContinuesWord(text[start + i])) {
    wrong_at = start + i;
    why = QuoteJsonText(want) + " is followed by " + QuoteJsonText(std::string_view(text).substr(wrong_at, 1)) +
          ", which continues the value";
  } else {
    score.pass = true;
    return score;
  }
  score.first_wrong_token = TokenAtOffset(ids, wrong_at, tokenizer);
  score.detail = why + " (byte " + std::to_string(wrong_at) +
                 (score.first_wrong_token >= 0 ? ", token " + std::to_string(score.first_wrong_token) : std::string()) +
                 ")";
  return score;
}

ProbeScore Fail(std::string detail) {
  ProbeScore s;
  s.detail = std::move(detail);
  return s;
}

ProbeScore Pass() {
  ProbeScore s;
  s.pass = true;
  return s;
}

ProbeScore ScoreEveryLine(const ProbeCheck& check, const std::string& text) {
  auto pattern = Regex::Compile(check.pattern, "pattern");
  if (!pattern) return Fail(pattern.error().message);
  std::unique_ptr<Regex> filter;
  if (!check.line_filter.empty()) {
    auto f = Regex::Compile(check.line_filter, "line filter");
    if (!f) return Fail(f.error().message);
    filter = std::move(*f);
  }
  int checked = 0;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {  // a final '\n' does not start another (empty) line
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    pos = end + 1;
    const int in_scope = filter ? filter->Search(line) : 1;
    if (in_scope < 0) return Fail("line filter gave up (match limit) on line " + std::to_string(line_no));
    if (in_scope == 0) continue;
    ++checked;
    const int ok = (*pattern)->Search(line);
    if (ok < 0) return Fail("pattern gave up (match limit) on line " + std::to_string(line_no));
    if (ok == 0) {
      return Fail("line " + std::to_string(line_no) + " " + QuoteJsonText(line, 40) + " does not match /" +
                  check.pattern + "/");
    }
  }
  if (checked < check.min_lines) {
    return Fail(std::to_string(checked) + " line(s) in scope, fewer than the " + std::to_string(check.min_lines) +
                " needed for the constraint to count as exercised");
  }
  return Pass();
}

}  // namespace

std::optional<TextSpan> FindFirstJsonSpan(std::string_view text) {
  const size_t open = text.find_first_of("{[");
  if (open == std::string_view::npos) return std::nullopt;
  int depth = 0;
  bool in_string = false;
  for (size_t i = open; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      ++depth;
    } else if (ch == '}' || ch == ']') {
      if (--depth == 0) return TextSpan{open, i + 1};
    }
  }
  return std::nullopt;
}

int TokenAtOffset(std::span<const int32_t> produced_ids, size_t offset, const Tokenizer& tokenizer) {
  // Decoded prefix lengths grow with the prefix (decoding concatenates token bytes; prefixes, not
  // single tokens, so the SentencePiece leading-space rule applies as in the full text), so each
  // search is a bisection over k = 0..n with O(log n) decodes.
  const size_t n = produced_ids.size();
  auto prefix_len = [&](size_t k) { return tokenizer.Decode(produced_ids.subspan(0, k)).size(); };
  auto first_k = [&](size_t lo, auto&& pred) {  // smallest k in [lo, n] with pred(k), else n + 1
    size_t hi = n + 1;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (pred(mid)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  };
  // The token whose text holds byte `offset`: the first prefix reaching past it ends with it.
  const size_t k = first_k(1, [&](size_t m) { return prefix_len(m) > offset; });
  if (k <= n) return static_cast<int>(k - 1);
  // The text ran out before `offset`: blame the first token that adds nothing at the end
  // (typically end-of-sequence), where the output stopped short; -1 if the tokens just ran out.
  const size_t e = first_k(0, [&](size_t m) { return prefix_len(m) >= offset; });
  return e < n ? static_cast<int>(e) : -1;
}

std::string ProbeCheck::Describe() const {
  switch (kind) {
    case Kind::kPrefix: return "prefix " + QuoteJsonText(expected);
    case Kind::kExactSpan: return "exact span " + QuoteJsonText(expected);
    case Kind::kRegex: return "regex /" + pattern + "/";
    case Kind::kContains: return "contains " + QuoteJsonText(expected);
    case Kind::kJsonValid: return "valid JSON";
    case Kind::kJsonEquals:
      return "JSON " + (json_path.empty() ? std::string("value") : json_path) + " == " + DumpShort(json_value);
    case Kind::kEveryLine:
      return "every line" + (line_filter.empty() ? std::string() : " matching /" + line_filter + "/") + " matches /" +
             pattern + "/ (at least " + std::to_string(min_lines) + ")";
  }
  return "?";
}

Status ProbeCheck::Validate() const {
  switch (kind) {
    case Kind::kPrefix:
    case Kind::kExactSpan:
    case Kind::kContains:
      if (expected.empty()) return BadInput("the expected text is empty; hint: give the text the output must hold");
      return Status::Ok();
    case Kind::kRegex: {
      if (pattern.empty()) return BadInput("the regex is empty; hint: give a PCRE2 pattern the output must match");
      auto re = Regex::Compile(pattern, "regex");
      if (!re) return re.error();
      return Status::Ok();
    }
    case Kind::kJsonValid: return Status::Ok();
    case Kind::kJsonEquals: {
      auto steps = ParseJsonPath(json_path);
      if (!steps) return steps.error();
      if (json_value.is_discarded()) return BadInput("the JSON value to compare with is missing; hint: give \"value\"");
      return Status::Ok();
    }
    case Kind::kEveryLine: {
      if (pattern.empty())
        return BadInput("the line pattern is empty; hint: give a PCRE2 pattern every line must match");
      auto re = Regex::Compile(pattern, "line pattern");
      if (!re) return re.error();
      if (!line_filter.empty()) {
        auto f = Regex::Compile(line_filter, "line filter");
        if (!f) return f.error();
      }
      if (min_lines < 0) return BadInput("min_lines is negative; hint: give 0 or more");
      return Status::Ok();
    }
  }
  return Internal("unknown probe check kind");
}

ProbeScore ScoreProbe(const ProbeCheck& check, std::span<const int32_t> produced_ids, const std::string& text,
                      const Tokenizer& tokenizer) {
  switch (check.kind) {
    case ProbeCheck::Kind::kPrefix: return ScorePrefix(check, produced_ids, text, tokenizer, /*strip=*/true);
    case ProbeCheck::Kind::kExactSpan: return ScorePrefix(check, produced_ids, text, tokenizer, /*strip=*/false);
    case ProbeCheck::Kind::kContains:
      return text.find(check.expected) != std::string::npos
                 ? Pass()
                 : Fail("no " + QuoteJsonText(check.expected) + " in the output");
    case ProbeCheck::Kind::kRegex: {
      auto re = Regex::Compile(check.pattern, "regex");
      if (!re) return Fail(re.error().message);
      const int found = (*re)->Search(text);
      if (found < 0) return Fail("regex /" + check.pattern + "/ gave up (match limit)");
      return found ? Pass() : Fail("no match for /" + check.pattern + "/ in the output");
    }
    case ProbeCheck::Kind::kJsonValid: {
      json value;
      std::string detail;
      return ParseFirstJson(text, &value, &detail) ? Pass() : Fail(detail);
    }
    case ProbeCheck::Kind::kJsonEquals: {
      auto steps = ParseJsonPath(check.json_path);
      if (!steps) return Fail(steps.error().message);
      json value;
      std::string detail;
      if (!ParseFirstJson(text, &value, &detail)) return Fail(detail);
      std::string why;
      const json* at = ResolveJsonPath(value, *steps, &why);
      if (at == nullptr) return Fail("JSON path " + QuoteJsonText(check.json_path) + ": " + why);
      // nlohmann's == compares numbers by value across integer and float (1 == 1.0) and never
      // equates a number with a string ("42" != 42).
      if (*at == check.json_value) return Pass();
      return Fail("JSON path " + QuoteJsonText(check.json_path) + ": got " + DumpShort(*at) + ", want " +
                  DumpShort(check.json_value));
    }
    case ProbeCheck::Kind::kEveryLine: return ScoreEveryLine(check, text);
  }
  return Fail("unknown probe check kind");
}

}  // namespace kvaudit
