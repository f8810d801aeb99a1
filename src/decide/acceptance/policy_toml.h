// The policy file's syntax and keys (decide/acceptance/policy.h has the meaning): TOML text -> one policy as
// written, every key known, typed and in range. What a file says together with its preset, and the
// contradictions between keys, are checked in policy.cc after `extends` is applied.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "decide/acceptance/policy.h"

namespace kvaudit {

// The policy exactly as `text` states it (extends not applied, nothing inherited).
Expected<AcceptancePolicy> ReadPolicyToml(std::string_view text, const std::string& source);

}  // namespace kvaudit
