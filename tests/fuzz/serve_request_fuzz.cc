// libFuzzer target: arbitrary bytes as the body of POST /v1/completions (kvaudit serve). Parsing
// must keep the invariants of serve_request_invariants.h: a clean 400, or a request within bounds.
// Seeds: tests/fuzz/corpus/serve_request (valid_* parse, bad_* are refused; the ordinary suite
// replays them, tests/unit/serve_request_corpus_test.cc).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "serve_request_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  kvaudit::serve::ApiError error;
  const auto request = kvaudit::serve::ParseCompletionRequest(body, &error);
  const std::string broken = kvaudit::fuzz::ServeRequestViolation(request, error);
  if (!broken.empty()) {
    std::fprintf(stderr, "serve_request_fuzz: %s\n", broken.c_str());
    __builtin_trap();
  }
  return 0;
}
