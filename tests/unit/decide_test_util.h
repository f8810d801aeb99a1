// Shared by the decide/ unit tests: model shapes and one engine's settings for a spec.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "decide/targets/target_settings.h"
#include "kv/config/cache_config.h"
#include "model/config.h"

namespace kvaudit::testing {

// A llama-architecture model of this attention shape (d_model = n_heads x head_dim).
inline ModelConfig AttentionShape(int n_layers, int n_heads, int n_kv_heads, int head_dim, int max_ctx) {
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.n_layers = n_layers, c.n_heads = n_heads, c.n_kv_heads = n_kv_heads, c.head_dim = head_dim;
  c.d_model = n_heads * head_dim;
  c.max_ctx = max_ctx;
  return c;
}

// Llama-3-8B's attention: 32 layers, 32 query heads, 8 KV heads, head_dim 128.
inline ModelConfig Llama3_8B() { return AttentionShape(32, 32, 8, 128, 131072); }
// The bundled model's (kvq-code-16m): 8 layers, 6 query heads, 2 KV heads, head_dim 64.
inline ModelConfig Small64() { return AttentionShape(8, 6, 2, 64, 4096); }

// The attention of three models with their real shapes (the GGUFs scripts/llamacpp_kv_buffers.sh
// writes): gpt-oss-20b (24 layers, 64 query / 8 KV heads, head_dim 64, window 128 on the even
// layers), Gemma-3-12B (48 layers, 16 / 8 heads, head_dim 256, window 1024 on layers l % 6 < 5)
// and Qwen3-30B-A3B (48 layers, 32 / 4 heads, head_dim 128, no window).
inline ModelConfig GptOss20B() {
  ModelConfig c = AttentionShape(24, 64, 8, 64, 131072);
  c.arch = Arch::kGptOss, c.sliding_window = 128;
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers.push_back(l % 2 == 0);
  return c;
}
inline ModelConfig Gemma3_12B() {
  ModelConfig c = AttentionShape(48, 16, 8, 256, 131072);
  c.arch = Arch::kGemma3, c.sliding_window = 1024;
  for (int l = 0; l < c.n_layers; ++l) c.sliding_layers.push_back(l % 6 < 5);
  return c;
}
inline ModelConfig Qwen3_30B_A3B() {
  ModelConfig c = AttentionShape(48, 32, 4, 128, 40960);
  c.arch = Arch::kQwen3Moe;
  return c;
}

inline TargetSettings SettingsOf(DeployTarget e, const std::string& spec, const ModelConfig& c = Llama3_8B(),
                                 int ctx = 32768) {
  auto p = CacheConfig::Parse(spec);
  EXPECT_TRUE(p.ok()) << spec;
  if (!p.ok()) return {};
  EXPECT_TRUE(p->Validate(c, /*have_calibration=*/true).ok()) << spec;
  return SettingsForTarget(e, *p, c, ctx);
}

inline bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

inline std::string Dump(const TargetSettings& s) {
  std::string out = std::string(TargetName(s.target)) + (s.exact ? " exact" : " not exact: " + s.why_not) + "\n  for " +
                    s.settings_for + "\n  flags:";
  for (const std::string& f : s.flags) out += " [" + f + "]";
  out += "\n  approximations:";
  for (const std::string& a : s.ApproximationSpecs()) out += " [" + a + "]";
  return out;
}

}  // namespace kvaudit::testing
