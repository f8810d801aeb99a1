// A cache configuration seen the way an inference engine's settings see it: per layer one K and
// one V format, the settings that go with them, and the kvaudit-only protections. Engines set
// formats per tensor type (K, V), at best per layer, never per KV head, so this is what
// target_settings.cc compares against each engine's knobs (docs/deployment.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kv/formats/format_table.h"
#include "kv/config/cache_config.h"
#include "model/config.h"

namespace kvaudit {

struct LayerKv {
  KvFormat k = KvFormat::kF16;
  KvFormat v = KvFormat::kF16;
  bool operator==(const LayerKv&) const = default;
};

bool SameHeadConfig(const HeadConfig& a, const HeadConfig& b);

struct TargetView {
  std::string spec;  // canonical spec (CacheConfig::spec)
  AttentionMode attention = AttentionMode::kNative;
  int head_dim = 0;
  std::vector<LayerKv> layers;    // [n_layers]: KV head 0's formats
  std::vector<HeadConfig> heads;  // [n_layers]: KV head 0's full configuration
  bool heads_differ = false;      // some layer's KV heads do not share one configuration
  int ckpt_scales_per_layer = 0;  // the checkpoint's k_scale/v_scale: 1 per tensor, n_kv_heads per head; 0: none

  static TargetView Of(const CacheConfig& cache_config, const ModelConfig& config);

  int n_layers() const { return static_cast<int>(layers.size()); }
  bool FormatsUniform() const;  // every layer stores layer 0's K and V formats
  bool HeadsUniform() const;    // every layer has layer 0's whole configuration (formats and modifiers)
  // Sinks, an explicit recent window (KIVI's residual is part of the format), outlier channels and
  // pre-RoPE keys: kvaudit protections no engine has. "" when none, else e.g. "sink=4, outliers=8".
  std::string KvauditOnlyProtections() const;
  bool AnyQuantized() const;  // some layer stores K or V below full precision
};

// The keys a target's candidate configurations carry besides their formats (scale=calib, rot=0,
// engine=llama.cpp, ...).
struct CandidateKeys {
  KvSettings mods;                         // never k or v
  std::optional<AttentionMode> attention;  // `engine=` written
};
// A uniform configuration: `pair` with `keys`.
CacheConfig PairSpec(const LayerKv& pair, const CandidateKeys& keys = {});
// A per-layer assignment: the pair most layers use (with `keys`) as the default, and one override
// per run of consecutive layers that differ.
CacheConfig LayeredSpec(const std::vector<LayerKv>& layers, const CandidateKeys& keys = {});

// Storage bits per element at this head_dim with default groups (the closeness measure below).
double DefaultBits(KvFormat f, int head_dim);
// The format of `have` with the nearest bits per element to f (f itself when present); ties go to
// the larger, then to the earlier in `have`.
KvFormat Nearest(KvFormat f, const std::vector<KvFormat>& have, int head_dim);
// Uniform (K, V) pairs standing in for the view's layers, closest first: the pair most layers
// use, then the most precise K and most precise V any layer uses (no tensor less precise than the
// spec). One pair when the formats are already uniform.
std::vector<LayerKv> UniformStandIns(const TargetView& view);

}  // namespace kvaudit
