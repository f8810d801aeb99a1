// --api-key-file: the key every request but GET /health must carry as "Authorization: Bearer KEY"
// (OpenAI's scheme; vLLM's --api-key and llama-server's --api-key-file check the same header).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace kvaudit::serve {

// The key: the file's first line, surrounding whitespace removed. BadInput (never echoing the
// contents) when it cannot be read or holds no key.
Expected<std::string> ReadApiKeyFile(const std::string& path);

// Whether an Authorization header value is "Bearer <key>". Constant time in the key's bytes: the
// work depends only on the header's length, so the comparison leaks nothing of where it differs.
bool BearerMatches(std::string_view header, std::string_view key);

}  // namespace kvaudit::serve
