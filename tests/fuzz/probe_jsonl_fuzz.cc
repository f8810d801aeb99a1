// libFuzzer target: arbitrary bytes as a custom probe JSONL file (issue 5). Parsing must either
// fail with a BadInput error or give probes whose checks validate and describe without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/custom.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto probes = kvaudit::ParseCustomProbes(text, "fuzz/probes.jsonl");
  if (!probes.ok()) {
    if (probes.error().code != kvaudit::ErrorCode::kBadInput) __builtin_trap();
    return 0;
  }
  for (const auto& p : *probes) {
    if (!p.check.Validate().ok()) __builtin_trap();  // the parser validated every check
    (void)p.check.Describe();
  }
  return 0;
}
