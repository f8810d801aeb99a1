#include "endpoint/server_report.h"

#include <array>

namespace kvaudit {
namespace {

struct KnownMetric {
  std::string_view name;  // up to the '{'
  std::string_view cache_label;
};
constexpr std::array<KnownMetric, 2> kCacheMetrics = {
    {{"vllm:cache_config_info", "cache_dtype"}, {"kvaudit_cache_config_info", "kv"}}};

// The labels of `{a="x",b="y"}` (Prometheus text format: values quoted, \" \\ \n escaped);
// nullopt when malformed.
std::optional<std::map<std::string, std::string>> ParseLabels(std::string_view s) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t eq = s.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return std::nullopt;
    const std::string key(s.substr(i, eq - i));
    std::string value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      char c = s[j];
      if (c == '\\' && j + 1 < s.size()) c = s[++j] == 'n' ? '\n' : s[j];
      value += c;
    }
    if (j >= s.size()) return std::nullopt;
    out[key] = value;
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return out;
}

}  // namespace

nlohmann::json ServerCacheReport::ToJson() const { return {{"metric", metric}, {"cache", cache}, {"labels", labels}}; }

std::optional<ServerCacheReport> ParseCacheReport(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    for (const KnownMetric& m : kCacheMetrics) {
      if (!line.starts_with(m.name) || line.size() <= m.name.size() || line[m.name.size()] != '{') continue;
      const size_t close = line.rfind('}');
      if (close == std::string_view::npos || close <= m.name.size()) continue;
      const auto labels = ParseLabels(line.substr(m.name.size() + 1, close - m.name.size() - 1));
      if (!labels || !labels->contains(std::string(m.cache_label))) continue;
      return ServerCacheReport{std::string(m.name), labels->at(std::string(m.cache_label)), *labels};
    }
  }
  return std::nullopt;
}

std::optional<ServerCacheReport> ReadCacheReport(const HttpClient& client) {
  const std::optional<std::string> text = client.GetTextOnce("/metrics");
  return text ? ParseCacheReport(*text) : std::nullopt;
}

}  // namespace kvaudit
