#include "endpoint/endpoint_spec.h"

#include <charconv>

namespace kvaudit {
namespace {

bool NameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool ValidName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!NameChar(c)) return false;
  }
  return true;
}

Error Bad(std::string_view flag, std::string_view text, const std::string& what, const std::string& hint) {
  return BadInput(std::string(flag) + " '" + std::string(text) + "': " + what + "; hint: " + hint);
}

}  // namespace

std::string EndpointSpec::origin() const { return scheme + "://" + host + ":" + std::to_string(port); }

std::string EndpointSpec::Url(const std::string& path) const { return origin() + base_path + path; }

bool HttpsAvailable() {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  return true;
#else
  return false;
#endif
}

Expected<EndpointSpec> ParseEndpointSpec(std::string_view text, std::string_view flag) {
  const std::string form = "write NAME=http://host:port[/base] or http://host:port";
  EndpointSpec spec;
  std::string_view url = text;
  const size_t eq = text.find('=');
  const size_t scheme_at = text.find("://");
  if (eq != std::string_view::npos && (scheme_at == std::string_view::npos || eq < scheme_at)) {
    const std::string_view name = text.substr(0, eq);
    if (!ValidName(name)) return Bad(flag, text, "the name '" + std::string(name) + "' is not [A-Za-z0-9._-]+", form);
    spec.name = std::string(name);
    url = text.substr(eq + 1);
  }
  if (url.rfind("http://", 0) == 0) {
    spec.scheme = "http";
  } else if (url.rfind("https://", 0) == 0) {
    if (!HttpsAvailable())
      return Bad(flag, text, "https is not available in this build (cpp-httplib without OpenSSL)",
                 "use http:// or a TLS-terminating proxy on loopback");
    spec.scheme = "https";
  } else {
    return Bad(flag, text, "the URL must start with http:// or https://", form);
  }
  std::string_view rest = url.substr(spec.scheme.size() + 3);
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Bad(flag, text, "credentials in the URL are refused (they would reach logs)",
               "put the key in KVAUDIT_API_KEY or a file (--api-key-file)");
  }
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) return Bad(flag, text, "the URL has no port", form);
  const std::string_view host = authority.substr(0, colon), port = authority.substr(colon + 1);
  if (host.empty() || host.find_first_of("[]:?#") != std::string_view::npos) {
    return Bad(flag, text, "the host '" + std::string(host) + "' is not a name or an IPv4 address", form);
  }
  int p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) {
    return Bad(flag, text, "the port '" + std::string(port) + "' is not in 1..65535", form);
  }
  if (path.find_first_of("?#") != std::string_view::npos)
    return Bad(flag, text, "the URL has a query or fragment", form);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.size() >= 3 && path.substr(path.size() - 3) == "/v1") path.remove_suffix(3);
  spec.host = std::string(host);
  spec.port = p;
  spec.base_path = std::string(path);
  if (spec.name.empty()) spec.name = spec.host + ":" + std::to_string(spec.port);
  return spec;
}

}  // namespace kvaudit
