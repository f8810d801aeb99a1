// libFuzzer target for the --kv spec parser and its model-dependent validation: any input must end
// in a clean error (exit code 2, a message with a hint) or a policy whose canonical spec parses
// back to itself and resolves for every (layer, head).
#include <cstdint>
#include <string>

#include "kv/policy/cache_policy.h"
#include "model/config.h"

namespace {

kvaudit::ModelConfig Config(int head_dim, int layers, int kv_heads) {
  kvaudit::ModelConfig c;
  c.n_layers = layers;
  c.n_heads = kv_heads * 3;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.d_model = c.n_heads * head_dim;
  return c;
}

void CheckError(const kvaudit::Error& e) {
  KV_CHECK(e.exit_code() == 2);
  KV_CHECK(!e.message.empty() && e.message.find('\n') == std::string::npos);
  KV_CHECK(e.message.find("hint:") != std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  if (spec.find('\n') != std::string::npos) return 0;  // one command-line argument
  auto parsed = kvaudit::CachePolicy::Parse(spec);
  if (!parsed.ok()) {
    CheckError(parsed.error());
    return 0;
  }
  auto again = kvaudit::CachePolicy::Parse(parsed->spec());
  KV_CHECK_MSG(again.ok() && again->spec() == parsed->spec(), "canonical spec must parse back to itself");
  for (const auto& c : {Config(64, 8, 2), Config(96, 3, 1), Config(128, 32, 8)}) {
    for (bool calib : {false, true}) {
      kvaudit::Status s = parsed->Validate(c, calib);
      if (!s.ok()) {
        CheckError(s.error());
        continue;
      }
      for (int l = 0; l < c.n_layers; ++l) {
        for (int h = 0; h < c.n_kv_heads; ++h) (void)parsed->ForHead(l, h);
      }
    }
  }
  return 0;
}
