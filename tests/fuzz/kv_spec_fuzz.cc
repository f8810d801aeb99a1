// libFuzzer target for the --kv spec parser and its model-dependent validation: any one-line input
// must keep the invariants of kv_spec_invariants.h (a clean error, or a configuration whose canonical spec
// parses back to itself and resolves for every (layer, head)).
#include <cstdint>
#include <string>

#include "kv_spec_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  if (spec.find('\n') != std::string::npos) return 0;  // one command-line argument
  // Parse, not FromArgument: an input starting with '@' would name a file to read.
  const std::string broken = kvaudit::fuzz::KvSpecViolation(kvaudit::CacheConfig::Parse(spec));
  KV_CHECK_MSG(broken.empty(), broken.c_str());
  return 0;
}
