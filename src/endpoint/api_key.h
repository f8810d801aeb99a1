// The API key an endpoint is called with (sent as `Authorization: Bearer <key>`, OpenAI API
// reference "Authentication"). Never a command-line value, since argv reaches shell history, `ps`
// and the run's logs: it comes from an environment variable (KVAUDIT_API_KEY, or the one
// --api-key-env names) or from a file's first line (--api-key-file), trimmed.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace kvaudit {

inline constexpr const char* kDefaultApiKeyEnv = "KVAUDIT_API_KEY";

struct ApiKeySource {
  std::string env_name;  // --api-key-env; "" = KVAUDIT_API_KEY, where unset means no key
  std::string file;      // --api-key-file; "" = none
};

// getenv is the lookup (std::getenv in the CLI; a map in tests). "" = no key (a server without
// --api-key). Errors: the file unreadable or empty, a named variable unset or empty, both sources
// given, or a key with control characters (it would break the header line).
Expected<std::string> LoadApiKey(const ApiKeySource& source, const std::function<const char*(const char*)>& getenv);

}  // namespace kvaudit
