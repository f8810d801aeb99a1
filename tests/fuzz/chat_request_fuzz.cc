// libFuzzer target: arbitrary bytes as the body of POST /v1/chat/completions (kvaudit serve).
// Parsing must keep the invariants of chat_request_invariants.h. Seeds:
// tests/fuzz/corpus/chat_request (valid_* parse, bad_* are refused; replayed by
// tests/unit/serve_request_corpus_test.cc).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "chat_request_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  kvaudit::serve::ApiError error;
  const auto request = kvaudit::serve::ParseChatRequest(body, &error);
  const std::string broken = kvaudit::fuzz::ChatRequestViolation(request, error);
  if (!broken.empty()) {
    std::fprintf(stderr, "chat_request_fuzz: %s\n", broken.c_str());
    __builtin_trap();
  }
  return 0;
}
