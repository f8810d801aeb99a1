// Whitespace off both ends of a text: the one trim of the program (flag values, spec lists, chat
// messages, key files). Whitespace is isspace's in the C locale: space, \t, \n, \v, \f, \r.
#pragma once

#include <string_view>

namespace kvaudit {

inline std::string_view TrimSpace(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

}  // namespace kvaudit
