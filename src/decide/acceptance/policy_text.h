// The policy's bytes made safe for toml++ before it parses them. toml++ 3.3.0 (Debian 12) reaches
// undefined behaviour (TOML_UNREACHABLE in is_non_ascii_horizontal_whitespace) for some non-ASCII
// code points where it looks for whitespace, e.g. U+00A7 or U+FEF7 at the start of a line (found by
// tests/fuzz/policy_fuzz.cc; upstream marzer/tomlplusplus issues 190 and 295, fixed after 3.3.0).
// A policy needs no non-ASCII text outside comments, so toml++ is given ASCII only: non-ASCII in a
// comment becomes '?', anywhere else it is an error, and so is invalid UTF-8.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace kvaudit {

// The text with a leading UTF-8 byte-order mark dropped and every non-ASCII code point of a
// comment replaced by one '?', so toml++'s line:column positions stay the user's; BadInput naming
// file:line:col for invalid UTF-8 or non-ASCII text outside a comment.
Expected<std::string> AsciiPolicyText(std::string_view text, const std::string& source);

// A message with every control character written as an escape (\n, \t, \xNN): TOML strings and
// quoted keys may hold "\n" or "\u0007", and an error that quotes them must stay one line.
std::string EscapeControlChars(std::string_view message);

}  // namespace kvaudit
