// libFuzzer target: arbitrary bytes as a custom probe JSONL file (docs/probes.md). Parsing must
// keep the invariants of probe_jsonl_invariants.h: a clean BadInput error, or probes whose checks
// validate. Seeds: tests/fuzz/corpus/probe_jsonl (valid_* parse, bad_* are rejected; the ordinary
// suite replays them, tests/unit/probe_custom_corpus_test.cc).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "probe_jsonl_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string broken =
      kvaudit::fuzz::ProbeJsonlViolation(kvaudit::ParseCustomProbes(text, "fuzz/probes.jsonl"), "fuzz/probes.jsonl");
  if (!broken.empty()) {
    std::fprintf(stderr, "probe_jsonl_fuzz: %s\n", broken.c_str());
    __builtin_trap();
  }
  return 0;
}
