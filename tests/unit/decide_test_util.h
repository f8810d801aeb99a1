// Shared by the decide/ unit tests: model shapes and one engine's settings for a spec.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "decide/engine_settings.h"
#include "kv/policy/cache_policy.h"
#include "model/config.h"

namespace kvaudit::testing {

// Llama-3-8B's attention shape: 32 layers, 32 query heads, 8 KV heads, head_dim 128.
inline ModelConfig Llama3_8B() {
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.n_layers = 32;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.head_dim = 128;
  c.d_model = 4096;
  c.max_ctx = 131072;
  return c;
}

// The bundled model's shape (kvq-code-16m): 8 layers, 2 KV heads, head_dim 64.
inline ModelConfig Small64() {
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.n_layers = 8;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.d_model = 384;
  c.max_ctx = 4096;
  return c;
}

inline EngineSettings SettingsOf(InferenceEngine e, const std::string& spec, const ModelConfig& c = Llama3_8B(),
                                 int ctx = 32768) {
  auto p = CachePolicy::Parse(spec);
  EXPECT_TRUE(p.ok()) << spec;
  if (!p.ok()) return {};
  EXPECT_TRUE(p->Validate(c, /*have_calibration=*/true).ok()) << spec;
  return SettingsForEngine(e, *p, c, ctx);
}

inline bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

inline std::string Dump(const EngineSettings& s) {
  std::string out = std::string(EngineName(s.engine)) + (s.exact ? " exact" : " not exact: " + s.why_not) + "\n  for " +
                    s.settings_for + "\n  flags:";
  for (const std::string& f : s.flags) out += " [" + f + "]";
  out += "\n  approximations:";
  for (const std::string& a : s.approximations) out += " [" + a + "]";
  return out;
}

}  // namespace kvaudit::testing
