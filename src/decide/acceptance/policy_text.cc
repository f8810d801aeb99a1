#include "decide/acceptance/policy_text.h"

#include <cstdint>
#include <cstdio>

namespace kvaudit {
namespace {

// Where the scanner is: code, a comment, or one of TOML's four string kinds (basic "...", literal
// '...', and their multi-line forms). Only comments may hold non-ASCII text.
enum class Lex { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };

// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF): the code point at
// text[i] and its length, or 0 for an invalid sequence.
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  const size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (n == 0 || lead > 0xF4 || i + n > text.size()) return 0;
  uint32_t v = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

bool At(std::string_view text, size_t i, std::string_view what) { return text.substr(i, what.size()) == what; }

// The state after the ASCII byte at text[i] (and how many more bytes of a delimiter or escape it
// takes with it, so `"""` and `\"` are read whole).
Lex Step(Lex s, std::string_view text, size_t i, size_t* extra) {
  const char c = text[i];
  *extra = 0;
  switch (s) {
    case Lex::kCode:
      if (c == '#') return Lex::kComment;
      if (c == '"') return At(text, i, "\"\"\"") ? (*extra = 2, Lex::kMultiBasic) : Lex::kBasic;
      if (c == '\'') return At(text, i, "'''") ? (*extra = 2, Lex::kMultiLiteral) : Lex::kLiteral;
      return s;
    case Lex::kComment: return c == '\n' ? Lex::kCode : s;
    case Lex::kBasic:  // an escaped newline is no escape here: a one-line string ends at the line
      if (c == '\\' && i + 1 < text.size() && static_cast<uint8_t>(text[i + 1]) < 0x80 && text[i + 1] != '\n') {
        *extra = 1;
      }
      return c == '"' || c == '\n' ? Lex::kCode : s;  // an unterminated string is toml++'s error
    case Lex::kLiteral: return c == '\'' || c == '\n' ? Lex::kCode : s;
    case Lex::kMultiBasic:
      if (c == '\\' && i + 1 < text.size() && static_cast<uint8_t>(text[i + 1]) < 0x80) *extra = 1;
      return At(text, i, "\"\"\"") ? (*extra = 2, Lex::kCode) : s;
    case Lex::kMultiLiteral: return At(text, i, "'''") ? (*extra = 2, Lex::kCode) : s;
  }
  return s;
}

}  // namespace

Expected<std::string> AsciiPolicyText(std::string_view text, const std::string& source) {
  std::string out;
  out.reserve(text.size());
  size_t i = At(text, 0, "\xEF\xBB\xBF") ? 3 : 0;  // a byte-order mark, as some editors write
  Lex state = Lex::kCode;
  int line = 1, col = 1;  // of text[i], 1-based, counted in code points as toml++ counts them
  auto where = [&] { return source + ":" + std::to_string(line) + ":" + std::to_string(col); };
  while (i < text.size()) {
    if (static_cast<uint8_t>(text[i]) >= 0x80) {
      uint32_t cp = 0;
      const size_t n = DecodeUtf8(text, i, &cp);
      char hex[16];
      if (n == 0) {
        std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(text[i])));
        return BadInput(std::string("invalid UTF-8 (byte ") + hex + "), " + where() +
                        "; hint: save the policy as UTF-8");
      }
      if (state != Lex::kComment) {
        std::snprintf(hex, sizeof(hex), "U+%04X", static_cast<unsigned>(cp));
        return BadInput(std::string("non-ASCII character ") + hex + " outside a comment, " + where() +
                        "; hint: a policy's keys, values and strings are ASCII; other text belongs in # comments");
      }
      out += '?', i += n, ++col;
      continue;
    }
    size_t extra = 0;
    state = Step(state, text, i, &extra);
    for (size_t k = 0; k <= extra; ++k, ++i) {
      out += text[i];
      text[i] == '\n' ? (++line, col = 1) : ++col;
    }
  }
  return out;
}

std::string EscapeControlChars(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x", out += kHex[c >> 4], out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace kvaudit
