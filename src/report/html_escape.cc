#include "report/html_escape.h"

#include <cstdint>

namespace kvaudit::report {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence starting at s[pos] (1..4), or 0 when the bytes there
// start none. The ranges are those of RFC 3629's table (no overlongs, no surrogates).
size_t ValidSequence(std::string_view s, size_t pos) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[pos + i]); };
  const uint8_t b0 = at(0);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (b0 == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong below U+10000
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (pos + len > s.size() || at(1) < lo || at(1) > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (at(i) < 0x80 || at(i) > 0xBF) return 0;
  }
  return len;
}

bool ForbiddenControl(char c) { return static_cast<uint8_t>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r'; }

// U+FFFE and U+FFFF are valid UTF-8 but no XML 1.0 characters.
bool Noncharacter(std::string_view seq) { return seq == "\xEF\xBF\xBE" || seq == "\xEF\xBF\xBF"; }

}  // namespace

std::string EscapeHtml(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t pos = 0; pos < s.size();) {
    const size_t len = ValidSequence(s, pos);
    if (len == 0) {
      out += kReplacement, ++pos;
      continue;
    }
    if (len > 1) {
      const std::string_view seq = s.substr(pos, len);
      out.append(Noncharacter(seq) ? std::string_view(kReplacement) : seq), pos += len;
      continue;
    }
    const char c = s[pos++];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (ForbiddenControl(c)) {
          out += kReplacement;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace kvaudit::report
