// User probes for `kvaudit probe --custom FILE`: a JSONL file, one probe per line,
//   {"id": "...", "prompt": "...", <one check>, "max_tokens": 64}
// with exactly one check: "expected" (kPrefix), "contains" (kContains), "regex" (kRegex),
// "json_valid": true (kJsonValid) or "json_equals": {"path": ..., "value": ...} (kJsonEquals).
// They run exactly as the built-in probes. The whole file is checked before anything runs: every
// problem on every line is collected, so the user fixes the file in one pass (docs/probes.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "probe/check.h"

namespace kvaudit {

inline constexpr int kDefaultProbeMaxTokens = 64;
inline constexpr int kMaxProbeMaxTokens = 4096;

struct CustomProbe {
  std::string id;
  std::string prompt;
  ProbeCheck check;
  int max_tokens = kDefaultProbeMaxTokens;  // 1..kMaxProbeMaxTokens
  int line = 0;                             // 1-based line in the file, for reports
};

// On any problem: one BadInput error whose message is
//   "N malformed probe line(s) in LABEL"
// then one line per problem, "LABEL:LINE: what; hint: ..." (at most 50, then "... and K more").
// Blank lines are skipped but counted, so line numbers match an editor's.
Expected<std::vector<CustomProbe>> ParseCustomProbes(std::string_view text, const std::string& label);
// Reads `path` and parses it with the path as the label.
Expected<std::vector<CustomProbe>> LoadCustomProbes(const std::string& path);

// What decides a custom probe's verdict besides its prompt, under the file's own keys: its check
// ("expected", "contains", "regex", "json_valid" or "json_equals") and "max_tokens". A resumed run
// compares it, so an edited check is named, never scored with the old verdict.
nlohmann::json CheckFields(const CustomProbe& probe);

}  // namespace kvaudit
