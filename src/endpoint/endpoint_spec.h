// One remote configuration as the user writes it: `NAME=URL` or `URL`
// (docs/endpoints.md). URL is http://host:port[/base] (or https:// where cpp-httplib was built
// with OpenSSL, as Debian's is); requests go to base + "/v1/completions" and friends. A trailing
// "/v1" on the URL is dropped, since OpenAI clients' base_url convention includes it and the
// tokenizer endpoints of vLLM and llama-server live beside /v1, not under it.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace kvaudit {

struct EndpointSpec {
  std::string name;       // [A-Za-z0-9._-]+, or host:port when not given
  std::string scheme;     // "http" or "https"
  std::string host;       // a name or an IPv4 address (no brackets)
  int port = 0;           // 1..65535
  std::string base_path;  // "" or "/prefix" (no trailing slash)

  // scheme://host:port, what httplib::Client takes.
  std::string origin() const;
  // origin + base + path: the URL named in every error line.
  std::string Url(const std::string& path) const;
};

// The spec, or one line naming what is wrong and where (`flag` names the flag in the message).
Expected<EndpointSpec> ParseEndpointSpec(std::string_view text, std::string_view flag = "--endpoint");

// Whether https:// URLs can be served (cpp-httplib compiled with CPPHTTPLIB_OPENSSL_SUPPORT).
bool HttpsAvailable();

}  // namespace kvaudit
