#include "endpoint/api_key.h"

#include <fstream>

#include "base/trim.h"

namespace kvaudit {
namespace {

Expected<std::string> Checked(std::string key, const std::string& where) {
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f) {
      return BadInput("the API key in " + where +
                      " has a control character; hint: the key is one line of printable text");
    }
  }
  return key;
}

}  // namespace

Expected<std::string> LoadApiKey(const ApiKeySource& source, const std::function<const char*(const char*)>& getenv) {
  if (!source.file.empty() && !source.env_name.empty()) {
    return BadInput("--api-key-file and --api-key-env both given; hint: name one source of the API key");
  }
  if (!source.file.empty()) {
    std::ifstream in(source.file);
    if (!in)
      return BadInput("cannot read the API key file '" + source.file + "'; hint: check the path and its permissions");
    std::string line;
    std::getline(in, line);
    const std::string key(TrimSpace(line));
    if (key.empty())
      return BadInput("the API key file '" + source.file + "' has an empty first line; hint: write the key on line 1");
    return Checked(key, "'" + source.file + "'");
  }
  const std::string name = source.env_name.empty() ? kDefaultApiKeyEnv : source.env_name;
  const char* value = getenv(name.c_str());
  const std::string key(value ? TrimSpace(value) : std::string_view());
  if (key.empty() && !source.env_name.empty()) {
    return BadInput("--api-key-env " + name + ": the variable is unset or empty; hint: export " + name + "=<key>");
  }
  if (key.empty()) return std::string();
  return Checked(key, "$" + name);
}

}  // namespace kvaudit
