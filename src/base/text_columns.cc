#include "base/text_columns.h"

#include <cstdio>

namespace kvaudit {

std::string PadColumn(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string FormatNumber(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, x);
  return buf;
}

std::string JoinWith(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

double GibAtContext(uint64_t bytes_per_token, int ctx) {
  return static_cast<double>(bytes_per_token) * ctx / (1024.0 * 1024.0 * 1024.0);
}

}  // namespace kvaudit
