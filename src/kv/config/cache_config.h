// A cache configuration: default K and V formats + modifiers + per-layer (and per-KV-head)
// overrides, given as one spec string (`--kv "k=q4_0,v=q4_0,rot=1;layers=0-1:k=f16,v=f16"`) or
// as JSON (`--kv @cache.json`). Grammar and semantics: docs/formats.md.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/formats/format_table.h"

namespace kvaudit {

struct ModelConfig;

// The per-tensor (or per-head) scale of fp8 and nvfp4: 1.0, from a calibration pass, an f32 scale
// per 32 elements (fp8), or the checkpoint's own k_scale/v_scale (ModelConfig::kv_scales).
enum class Fp8ScaleMode { kUnit, kCalib, kDynamic, kCkpt };
enum class Fp8ScaleBy { kLayer, kHead };
enum class RotationMode { kAuto, kOff, kOn };  // auto: on only under engine=llama.cpp where llama.cpp would rotate
enum class AttentionMode { kNative, kLlamaCpp };

// Everything that decides how one (layer, KV head) stores its K and V.
struct HeadConfig {
  KvFormat k = KvFormat::kF32;
  KvFormat v = KvFormat::kF32;
  Fp8ScaleMode scale = Fp8ScaleMode::kUnit;
  Fp8ScaleBy scale_by = Fp8ScaleBy::kLayer;
  int group = 0;    // int8/int4 elements per group (default 64); KIVI tokens/channels per group (default 32)
  int recent = -1;  // newest tokens kept in full precision; -1 = format default (KIVI 128, else 0)
  int sink = 0;     // first tokens kept in full precision (attention sinks)
  RotationMode rot = RotationMode::kAuto;
  int outliers = 0;       // largest-magnitude key channels kept in full precision (needs calibration)
  bool pre_rope = false;  // quantize keys before RoPE (KVQuant); RoPE applied after dequantization

  int KiviGroup() const { return group > 0 ? group : 32; }
  int IntGroup() const { return group > 0 ? group : 64; }
  int Recent() const { return recent >= 0 ? recent : ((IsKivi(k) || IsKivi(v)) ? 128 : 0); }
  // Storage bits per element of format f (k or v) under this configuration's group size and fp8 scale mode.
  double BitsPerElement(KvFormat f, int head_dim) const {
    return kvaudit::BitsPerElement(f, IsKivi(f) ? KiviGroup() : IntGroup(), scale == Fp8ScaleMode::kDynamic, head_dim);
  }
};

// Which layers an override names beside its index range: every layer, only those of one
// attention kind (a sliding-window layer or a global one: ModelConfig::is_sliding), or the ends of
// the stack: the first and the last min(2, n_layers / 2) layers, the layers vLLM's TurboQuant keeps
// unquantized on every non-hybrid model (TurboQuantConfig.get_boundary_skip_layers).
enum class LayerKind { kAny, kGlobal, kSliding, kEnds };
inline bool IsEndLayer(int layer, int n_layers) {
  const int n = std::min(2, n_layers / 2);
  return layer < n || layer >= n_layers - n;
}

struct IndexRange {
  int first = 0, last = -1;  // last = -1: to the end
  bool Contains(int i) const { return i >= first && (last < 0 || i <= last); }
  bool operator==(const IndexRange&) const = default;
};

// The keys one segment of a spec writes, typed; nullopt = not written (the layer inherits it).
struct KvSettings {
  std::optional<KvFormat> k, v;
  std::optional<Fp8ScaleMode> scale;
  std::optional<Fp8ScaleBy> scale_by;
  std::optional<int> group, recent, sink;
  std::optional<RotationMode> rot;
  std::optional<int> outliers;
  std::optional<bool> pre_rope;

  // One segment's keys ("k=q4_0,rot=1"; kv= expands, no engine=, no selector); errors name
  // `origin` and the text.
  static Expected<KvSettings> Parse(std::string_view text, std::string_view origin);

  void ApplyTo(HeadConfig& p) const;                    // the written keys over p
  void Overlay(const KvSettings& over);                 // the keys `over` writes replace these
  bool empty() const { return *this == KvSettings{}; }  // writes no key
  bool NeedsCalibration() const { return scale == Fp8ScaleMode::kCalib || outliers.value_or(0) > 0; }
  // The written keys in the canonical order k, v, scale, scale_by, group, recent, sink, rot,
  // outliers, prerope ("k=q4_0,v=q4_0,rot=1"); "" when none is.
  std::string Print() const;
  bool operator==(const KvSettings&) const = default;
};

class CacheConfig {
 public:
  // Syntax only (formats, keys, numbers, ranges); model-dependent checks are in Validate. `origin`
  // names where the spec came from in error messages ("--kv", "--baseline").
  static Expected<CacheConfig> Parse(std::string_view spec, std::string_view origin = "--kv");
  // `@path`: JSON file; anything else: a spec string.
  static Expected<CacheConfig> FromArgument(const std::string& arg, std::string_view origin = "--kv");
  static CacheConfig F32();
  // Built from values: decide/ composes configurations this way, and Parse(spec()) gives the same
  // value back. attention: `engine=` written (nullopt: not written, native).
  static CacheConfig Uniform(KvSettings defaults, std::optional<AttentionMode> attention = std::nullopt);
  // What vLLM runs for `--kv-cache-dtype <preset>`: the preset's K and V formats, and the end
  // layers in bf16 (`kv=<preset>` parses to this).
  static CacheConfig OfTurboQuantPreset(const TurboQuantPreset& preset);
  // This configuration with one more override after the others: `layers` (every KV head) store
  // `settings` over the defaults. KV_CHECK: settings write a key, layers.first <= layers.last.
  CacheConfig WithLayers(IndexRange layers, KvSettings settings) const;
  // The same for every layer of one attention kind ("layers=sliding:..."). KV_CHECK: a kind, a key.
  CacheConfig WithLayerKind(LayerKind kind, KvSettings settings) const;
  // This configuration computed by `attention`, written as its `engine=` key (a target's engine:
  // decide/targets/measure_target.h); every other key as it was.
  CacheConfig WithAttention(AttentionMode attention) const;
  // The same configuration with no scale= or scale_by= key anywhere: every per-tensor scale (fp8,
  // nvfp4) at 1.0, which is what an engine runs when a checkpoint's k_scale/v_scale do not load.
  CacheConfig WithoutScales() const;

  // Block sizes dividing head_dim, rotation sizes, layer/head ranges inside the model, no two
  // overrides covering the same (layer, head), calibration-free settings where no calibration
  // is given. Error messages quote the spec and name the offending key.
  Status Validate(const ModelConfig& config, bool have_calibration) const;

  // Defaults, then the override covering (layer, head) of `model` (whose layers' attention kinds a
  // layers=global|sliding selector reads).
  HeadConfig ForHead(const ModelConfig& model, int layer, int kv_head) const;
  // The same given whether the layer slides (for code that holds the kinds, not the model;
  // KV_CHECK: no layers=ends selector, which needs the model's layer count).
  HeadConfig ForHead(int layer, int kv_head, bool sliding) const;
  // The same for a configuration without a kind selector (KV_CHECK): tests and model-free code.
  HeadConfig ForHead(int layer, int kv_head) const;
  bool HasLayerKinds() const;  // some override selects layers=global, layers=sliding or layers=ends
  AttentionMode attention() const { return attention_; }  // the spec's `engine=` key
  std::optional<AttentionMode> attention_written() const { return attention_written_; }
  const KvSettings& defaults() const { return defaults_; }
  // The keys each segment writes: the defaults, then every override's, in the order given.
  std::vector<KvSettings> Segments() const;
  bool HasOverrides() const { return !overrides_.empty(); }
  bool NeedsCalibration() const;  // any fp8 `calib` scale or outlier channels
  bool IsPlainF32() const;        // no override, f32/f32 defaults, native engine
  // Canonical spec string (keys in a fixed order, explicit keys only, integers in decimal):
  // results name configs by it, and Parse(spec()) is this configuration again.
  const std::string& spec() const { return spec_; }
  // The same configuration (the origin does not count).
  bool operator==(const CacheConfig& o) const {
    return defaults_ == o.defaults_ && overrides_ == o.overrides_ && attention_written_ == o.attention_written_;
  }

 private:
  struct Override {
    IndexRange layers, heads;          // heads {0, -1}: every KV head
    LayerKind kind = LayerKind::kAny;  // kGlobal/kSliding: layers is {0, -1}
    KvSettings settings;               // at least one key
    bool operator==(const Override&) const = default;
  };
  std::string Print() const;
  // Whether ov covers `layer` of `model` (its range, and its kind where it names one).
  static bool Covers(const Override& ov, const ModelConfig& model, int layer);
  // ForHead given the layer's kind and the model's layer count (n_layers < 0: unknown, KV_CHECK
  // no layers=ends).
  HeadConfig ForHeadIn(int layer, int kv_head, bool sliding, int n_layers) const;
  static bool KindMatches(LayerKind kind, int layer, bool sliding, int n_layers);

  KvSettings defaults_;                             // a spec that starts with a selector has k=f32,v=f32
  std::vector<Override> overrides_;                 // in the order given
  std::optional<AttentionMode> attention_written_;  // `engine=` as written (printed only then)
  AttentionMode attention_ = AttentionMode::kNative;
  std::string origin_ = "--kv";
  std::string spec_;
};

}  // namespace kvaudit
