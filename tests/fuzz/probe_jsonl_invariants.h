// What must hold for every custom probe file, whatever the bytes: shared by the fuzz target
// (tests/fuzz/probe_jsonl_fuzz.cc) and the replay of its corpus in the ordinary suite
// (tests/unit/probe_custom_corpus_test.cc). A rejected file gives one BadInput error (exit 2) whose
// first line counts the malformed lines in the file ("N malformed probe line(s) in LABEL") or, for
// a file without probes, starts with "LABEL: "; an accepted one gives probes whose checks validate
// and describe themselves.
#pragma once

#include <string>
#include <vector>

#include "probe/custom.h"

namespace kvaudit::fuzz {

// "" when every invariant holds for ParseCustomProbes(…, label)'s result, else the first that broke.
inline std::string ProbeJsonlViolation(const Expected<std::vector<CustomProbe>>& probes, const std::string& label) {
  if (!probes.ok()) {
    const Error& e = probes.error();
    if (e.code != ErrorCode::kBadInput || e.exit_code() != 2) return "not a BadInput error: " + e.message;
    const std::string head = e.message.substr(0, e.message.find('\n'));
    if (head.find(" malformed probe line(s) in " + label) == std::string::npos && head.rfind(label + ": ", 0) != 0) {
      return "first line names neither the malformed lines nor the file: " + head;
    }
    return "";
  }
  for (const CustomProbe& p : *probes) {
    if (p.id.empty() || p.prompt.empty()) return "line " + std::to_string(p.line) + ": empty id or prompt accepted";
    if (p.max_tokens < 1 || p.max_tokens > kMaxProbeMaxTokens) return "line " + std::to_string(p.line) + ": max_tokens";
    if (!p.check.Validate().ok()) return "line " + std::to_string(p.line) + ": accepted check does not validate";
    (void)p.check.Describe();
  }
  return "";
}

}  // namespace kvaudit::fuzz
