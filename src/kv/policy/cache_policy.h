// A cache configuration: default K and V formats + modifiers + per-layer (and per-KV-head)
// overrides, given as one spec string (`--kv "k=q4_0,v=q4_0,rot=1;layers=0-1:k=f16,v=f16"`) or
// as JSON (`--kv @policy.json`). Grammar and semantics: docs/formats.md.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/formats/format_table.h"

namespace kvaudit {

struct ModelConfig;

enum class Fp8ScaleMode { kUnit, kCalib, kDynamic };
enum class Fp8ScaleBy { kLayer, kHead };
enum class RotationMode { kAuto, kOff, kOn };  // auto: on only under engine=llama.cpp where llama.cpp would rotate
enum class AttentionEngine { kNative, kLlamaCpp };

// Everything that decides how one (layer, KV head) stores its K and V.
struct HeadPolicy {
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
  // Storage bits per element of format f (k or v) under this policy's group size and fp8 scale mode.
  double BitsPerElement(KvFormat f, int head_dim) const {
    return kvaudit::BitsPerElement(f, IsKivi(f) ? KiviGroup() : IntGroup(), scale == Fp8ScaleMode::kDynamic, head_dim);
  }
};

struct InclusiveRange {
  int first = 0, last = -1;  // last = -1: to the end
  bool Contains(int i, int end) const { return i >= first && i <= (last < 0 ? end - 1 : last); }
};

class CachePolicy {
 public:
  // Syntax only (formats, keys, numbers, ranges); model-dependent checks are in Validate.
  static Expected<CachePolicy> Parse(std::string_view spec);
  // `@path`: JSON file; anything else: a spec string.
  static Expected<CachePolicy> FromArgument(const std::string& arg);
  static CachePolicy F32();

  // Block sizes dividing head_dim, rotation sizes, layer/head ranges inside the model, no two
  // overrides covering the same (layer, head), calibration-free settings where no calibration
  // is given. Error messages quote the spec and name the offending key.
  Status Validate(const ModelConfig& config, bool have_calibration) const;

  HeadPolicy ForHead(int layer, int kv_head) const;  // defaults, then the override covering it
  AttentionEngine engine() const { return engine_; }
  bool NeedsCalibration() const;  // any fp8 `calib` scale or outlier channels
  bool IsPlainF32() const;        // no override, f32/f32 defaults, native engine
  // Canonical spec string (keys in a fixed order, explicit keys only): results name configs by it.
  const std::string& spec() const { return spec_; }

 private:
  struct Override {
    InclusiveRange layers, heads;
    std::map<std::string, std::string> settings;  // key -> value, as given
  };
  static Status ApplySetting(HeadPolicy& p, const std::string& key, const std::string& value, std::string_view where);
  static std::string Canonical(const std::map<std::string, std::string>& settings);

  std::map<std::string, std::string> defaults_;
  std::vector<Override> overrides_;
  AttentionEngine engine_ = AttentionEngine::kNative;
  std::string spec_;
};

}  // namespace kvaudit
