// libFuzzer target: arbitrary bytes as an acceptance policy file (decide/acceptance/policy.h). TOML
// parsing (toml++, non-throwing) and every key check must keep the invariants of
// policy_invariants.h: a clean one-line BadInput naming the file, or a policy that judges something
// with in-range values and disjoint ranges. Seeds: tests/fuzz/corpus/policy (bad_* are rejected,
// the others parse; tests/unit/decide_policy_corpus_test.cc replays them).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "policy_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string broken = kvaudit::fuzz::PolicyViolation(kvaudit::ParsePolicy(text, "fuzz.toml"), "fuzz.toml");
  if (!broken.empty()) {
    std::fprintf(stderr, "policy_fuzz: %s\n", broken.c_str());
    __builtin_trap();
  }
  return 0;
}
