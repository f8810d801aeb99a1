// libFuzzer target: arbitrary bytes as tokenizer.json (first half) and tokenizer_config.json
// (after the first NUL, if any). Loading must fail cleanly or give a tokenizer that encodes and
// decodes a fixed mixed string without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::string_view json = all;
  std::string_view config;
  if (size_t nul = all.find('\0'); nul != std::string_view::npos) {
    json = all.substr(0, nul);
    config = all.substr(nul + 1);
  }
  auto tok = kvaudit::Tokenizer::FromHfJsonText(json, config, "fuzz/tokenizer.json");
  if (!tok.ok()) return 0;
  static constexpr std::string_view kText = "def f(x):\n    return x + 1  # héllo 世界 🦙 \xff<|endoftext|>  \t\n";
  for (bool special : {false, true}) {
    const auto ids = (*tok)->Encode(kText, (*tok)->add_bos_default(), special);
    (void)(*tok)->Decode(ids, special);
    for (int32_t id : ids) (void)(*tok)->TokenString(id);
  }
  return 0;
}
