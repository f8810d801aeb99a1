#include "serve/auth.h"

#include <fstream>

namespace kvaudit::serve {

Expected<std::string> ReadApiKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput("--api-key-file " + path + ": cannot be read; hint: check the path and its permissions");
  std::string line;
  std::getline(in, line);
  const size_t begin = line.find_first_not_of(" \t\r\n");
  const size_t end = line.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) {
    return BadInput("--api-key-file " + path + ": holds no key; hint: write the key on its first line");
  }
  return line.substr(begin, end - begin + 1);
}

bool BearerMatches(std::string_view header, std::string_view key) {
  constexpr std::string_view kScheme = "Bearer ";
  if (header.size() != kScheme.size() + key.size()) return false;  // the length is not the secret
  unsigned diff = 0;
  for (size_t i = 0; i < header.size(); ++i) {
    const char want = i < kScheme.size() ? kScheme[i] : key[i - kScheme.size()];
    diff |= static_cast<unsigned char>(header[i]) ^ static_cast<unsigned char>(want);
  }
  // volatile: keep the compiler from turning the loop into an early-exit memcmp.
  volatile unsigned result = diff;
  return result == 0;
}

}  // namespace kvaudit::serve
