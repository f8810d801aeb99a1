// What must hold for every --kv spec, whatever the bytes: shared by the fuzz target
// (tests/fuzz/kv_spec_fuzz.cc) and the replay of its corpus in the ordinary suite
// (tests/unit/kv_spec_corpus_test.cc). An error is clean (exit code 2, one line, a hint); an accepted
// spec's canonical form parses back to itself, and against four model shapes (head_dim 64/96/128, one
// with sliding-window layers beside global ones) with and without calibration Validate gives a clean
// error or a configuration that resolves for every (layer, head).
#pragma once

#include <string>

#include "kv/config/cache_config.h"
#include "model/config.h"

namespace kvaudit::fuzz {

inline ModelConfig KvSpecModel(int head_dim, int layers, int kv_heads) {
  ModelConfig c;
  c.n_layers = layers;
  c.n_heads = kv_heads * 3;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.d_model = c.n_heads * head_dim;
  return c;
}

// The same shape whose even layers slide over a window of 128 (gpt-oss's pattern).
inline ModelConfig KvSpecSlidingModel(int head_dim, int layers, int kv_heads) {
  ModelConfig c = KvSpecModel(head_dim, layers, kv_heads);
  c.sliding_window = 128;
  c.sliding_layers.assign(layers, 0);
  for (int l = 0; l < layers; l += 2) c.sliding_layers[l] = 1;
  return c;
}

// "" for a clean error, else what is wrong with it.
inline std::string UncleanError(const Error& e) {
  if (e.exit_code() != 2) return "exit code " + std::to_string(e.exit_code()) + ": " + e.message;
  if (e.message.empty() || e.message.find('\n') != std::string::npos) return "not one line: " + e.message;
  if (e.message.find("hint:") == std::string::npos) return "no hint: " + e.message;
  return "";
}

// "" when every invariant holds for a parse result, else the first one that broke.
inline std::string KvSpecViolation(const Expected<CacheConfig>& parsed) {
  if (!parsed.ok()) return UncleanError(parsed.error());
  const auto again = CacheConfig::Parse(parsed->spec());
  if (!again.ok() || again->spec() != parsed->spec()) {
    return "canonical spec '" + parsed->spec() + "' does not parse back to itself";
  }
  for (const ModelConfig& c :
       {KvSpecModel(64, 8, 2), KvSpecModel(96, 3, 1), KvSpecModel(128, 32, 8), KvSpecSlidingModel(64, 6, 2)}) {
    for (bool calib : {false, true}) {
      const Status s = parsed->Validate(c, calib);
      if (!s.ok()) {
        const std::string bad = UncleanError(s.error());
        if (!bad.empty()) return "Validate(head_dim " + std::to_string(c.head_dim) + "): " + bad;
        continue;
      }
      for (int l = 0; l < c.n_layers; ++l) {
        for (int h = 0; h < c.n_kv_heads; ++h) (void)parsed->ForHead(c, l, h);
      }
    }
  }
  return "";
}

}  // namespace kvaudit::fuzz
