// The built-in acceptance policies (docs/decision.md "Acceptance policy" gives each threshold's
// rationale): TOML text embedded in the binary and read by the same parser as a user's file, so a
// preset is checked like one (tests/unit/decide_policy_test.cc parses every preset).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvaudit {

// The preset's TOML text, or nullopt when no preset has that name.
std::optional<std::string_view> PresetText(std::string_view name);
// The presets' names, in the order docs/decision.md lists them.
const std::vector<std::string>& PresetNames();

}  // namespace kvaudit
