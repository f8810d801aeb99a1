// Model-dependent checks of a cache configuration and its JSON form. Everything a later stage would
// trip over is rejected here, before any compute.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kv/config/cache_config.h"
#include "model/config.h"

namespace kvaudit {
namespace {

// `origin` "spec": what; hint: ... (origin: the flag the spec came from, e.g. --kv or --baseline).
struct SpecErrors {
  const std::string& origin;
  const std::string& spec;
  Error operator()(const std::string& what, const std::string& hint) const {
    return BadInput(origin + " \"" + spec + "\": " + what + "; hint: " + hint);
  }
};

bool IsPow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Checks one tensor (K or V) of one (layer, head).
Status CheckFormat(const SpecErrors& spec_error, const std::string& where, KvFormat f, const HeadConfig& p,
                   const ModelConfig& c, AttentionMode attention) {
  const std::string name(KvFormatName(f));
  if (FormatBlockElems(f) > 0 && c.head_dim % FormatBlockElems(f) != 0) {
    return spec_error(where + name + " needs head_dim to be a multiple of " + std::to_string(FormatBlockElems(f)) +
                          ", this model has " + std::to_string(c.head_dim),
                      "pick a format without 32-element blocks (fp8_e4m3, int8, kivi4) for these layers");
  }
  if (IsIntGroup(f) && c.head_dim % p.IntGroup() != 0) {
    return spec_error(where + name + " group " + std::to_string(p.IntGroup()) + " does not divide head_dim " +
                          std::to_string(c.head_dim),
                      "set group= to a divisor of head_dim");
  }
  if (IsKivi(f) && c.head_dim % p.KiviGroup() != 0) {
    return spec_error(where + name + " groups values over " + std::to_string(p.KiviGroup()) +
                          " channels, which does not divide head_dim " + std::to_string(c.head_dim),
                      "set group= to a divisor of head_dim");
  }
  if (IsKivi(f) && (p.Recent() < p.KiviGroup() || p.Recent() % p.KiviGroup() != 0)) {
    return spec_error(where + name + " needs recent= to be a positive multiple of its group " +
                          std::to_string(p.KiviGroup()) + " (KIVI flushes its full-precision residual in whole groups)",
                      "e.g. recent=128 with group=32");
  }
  if (p.scale == Fp8ScaleMode::kDynamic && HasTensorScale(f) && Format(f).dynamic_codec == nullptr) {
    return spec_error(where + name +
                          " has no scale=dynamic: its blocks carry their own scales under one per-layer "
                          "scale",
                      "use scale=unit (the engine without checkpoint scales) or scale=calib");
  }
  if (p.scale == Fp8ScaleMode::kCkpt && HasTensorScale(f)) {
    if (c.kv_scales.empty()) {
      return spec_error(where + "scale=ckpt: this checkpoint has no k_scale/v_scale tensors",
                        "use scale=unit (what an engine runs then) or scale=calib with --kv-calib");
    }
    const bool per_head = c.kv_scales.per_layer > 1;
    if (per_head != (p.scale_by == Fp8ScaleBy::kHead)) {
      return spec_error(where + "scale=ckpt: the checkpoint's scales (" + c.kv_scales.source + ") are per " +
                            (per_head ? "KV head" : "tensor"),
                        per_head ? "add scale_by=head" : "drop scale_by=head");
    }
  }
  if (RowRotatesItself(f) && (!IsPow2(c.head_dim) || c.head_dim > 1024)) {
    return spec_error(where + name +
                          " rotates rows with a Hadamard matrix of size head_dim, a power of two up to 1024; "
                          "this model has " +
                          std::to_string(c.head_dim),
                      "vLLM runs TurboQuant only for such head sizes; pick another format for these layers");
  }
  if (RowRotatesItself(f) && (p.outliers > 0 || (p.pre_rope && f == p.k))) {
    return spec_error(where + name + " stores rows in its own rotated basis: outliers= and prerope=1 do not apply",
                      "drop outliers= / prerope=1 for these layers");
  }
  if (p.pre_rope && p.rot == RotationMode::kOn) {
    return spec_error(where + "prerope=1 with rot=1: a rotation of pre-RoPE keys does not commute with RoPE",
                      "use one of them");
  }
  if (attention == AttentionMode::kLlamaCpp && !HasLlamaCppType(f)) {
    std::string types;
    for (const FormatRow& r : FormatTable()) {
      if (HasLlamaCppType(r.id)) types += (types.empty() ? "" : ", ") + std::string(r.name);
    }
    return spec_error(where + "llama.cpp has no " + name + " cache type", "engine=llama.cpp emulates " + types);
  }
  return Status::Ok();
}

// An override's layer range and KV-head range inside the model, and a kind selector that names at
// least one layer of it.
Status CheckSelector(const SpecErrors& spec_error, const IndexRange& layers, LayerKind kind, const IndexRange& heads,
                     const ModelConfig& c) {
  const int last = layers.last < 0 ? c.n_layers - 1 : layers.last;
  if (layers.first >= c.n_layers || last >= c.n_layers) {
    return spec_error("layers=" + std::to_string(layers.first) + "-" + std::to_string(last) +
                          " is outside the model's " + std::to_string(c.n_layers) + " layers",
                      "layers are numbered 0.." + std::to_string(c.n_layers - 1));
  }
  const int hlast = heads.last < 0 ? c.n_kv_heads - 1 : heads.last;
  if (heads.first >= c.n_kv_heads || hlast >= c.n_kv_heads) {
    return spec_error("heads=" + std::to_string(heads.first) + "-" + std::to_string(hlast) +
                          " is outside the model's " + std::to_string(c.n_kv_heads) + " KV heads",
                      "KV heads are numbered 0.." + std::to_string(c.n_kv_heads - 1));
  }
  if (kind == LayerKind::kAny) return Status::Ok();
  if (kind == LayerKind::kEnds && c.n_layers < 2) {
    return spec_error("layers=ends selects no layer: this model has one layer", "use the defaults");
  }
  const int n_sliding = c.n_sliding_layers();
  if (kind == LayerKind::kSliding && n_sliding == 0) {
    return spec_error("layers=sliding selects no layer: this model has no sliding-window layers",
                      "use a layer range (layers=A-B)");
  }
  if (kind == LayerKind::kGlobal && n_sliding == c.n_layers) {
    return spec_error("layers=global selects no layer: every layer of this model slides (window " +
                          std::to_string(c.sliding_window) + ")",
                      "use a layer range (layers=A-B) or the defaults");
  }
  return Status::Ok();
}

}  // namespace

bool CacheConfig::NeedsCalibration() const {
  if (defaults_.NeedsCalibration()) return true;
  for (const Override& ov : overrides_) {
    if (ov.settings.NeedsCalibration()) return true;
  }
  return false;
}

Status CacheConfig::Validate(const ModelConfig& c, bool have_calibration) const {
  const SpecErrors spec_error{origin_, spec_};
  for (size_t i = 0; i < overrides_.size(); ++i) {
    const Override& a = overrides_[i];
    KV_RETURN_IF_ERROR(CheckSelector(spec_error, a.layers, a.kind, a.heads, c));
    const int a_hlast = a.heads.last < 0 ? c.n_kv_heads - 1 : a.heads.last;
    for (size_t j = 0; j < i; ++j) {
      const Override& b = overrides_[j];
      const int b_hlast = b.heads.last < 0 ? c.n_kv_heads - 1 : b.heads.last;
      const bool heads_meet = a.heads.first <= b_hlast && b.heads.first <= a_hlast;
      bool layers_meet = false;
      for (int l = 0; l < c.n_layers && !layers_meet; ++l) layers_meet = Covers(a, c, l) && Covers(b, c, l);
      if (layers_meet && heads_meet) {
        return spec_error(
            "overrides " + std::to_string(j + 1) + " and " + std::to_string(i + 1) + " cover the same layers/heads",
            "make layer ranges disjoint (layers=global and layers=sliding never meet)");
      }
    }
  }
  if (NeedsCalibration() && !have_calibration) {
    return spec_error("scale=calib and outliers= need a calibration pass",
                      "pass --kv-calib FILE with text like your workload");
  }
  for (int layer = 0; layer < c.n_layers; ++layer) {
    for (int head = 0; head < c.n_kv_heads; ++head) {
      const HeadConfig p = ForHead(c, layer, head);
      const std::string where = "layer " + std::to_string(layer) + " head " + std::to_string(head) + ": ";
      KV_RETURN_IF_ERROR(CheckFormat(spec_error, where, p.k, p, c, attention_));
      KV_RETURN_IF_ERROR(CheckFormat(spec_error, where, p.v, p, c, attention_));
      if (p.outliers >= c.head_dim) {
        return spec_error(
            where + "outliers=" + std::to_string(p.outliers) + " is not below head_dim " + std::to_string(c.head_dim),
            "keep a few channels, e.g. outliers=4");
      }
      if (p.rot == RotationMode::kOn && attention_ == AttentionMode::kNative && !IsPow2(c.head_dim)) {
        return spec_error(where +
                              "rot=1 needs a power-of-two head_dim for an exact Hadamard rotation, this model has " +
                              std::to_string(c.head_dim),
                          "use rot=0, or engine=llama.cpp for its block-wise rotation");
      }
      if (p.rot == RotationMode::kOn && attention_ == AttentionMode::kLlamaCpp && c.head_dim % 64 != 0) {
        return spec_error(where + "llama.cpp rotates only when head_dim is a multiple of 64 (this model: " +
                              std::to_string(c.head_dim) + ")",
                          "use rot=0 or rot=auto");
      }
      if (attention_ == AttentionMode::kLlamaCpp && (p.sink || p.Recent() || p.outliers || p.pre_rope)) {
        return spec_error(where + "llama.cpp has no sink/recent/outlier/pre-RoPE protection",
                          "drop those modifiers or use engine=native");
      }
      if (p.sink > 0 && c.is_sliding(layer)) {
        // A sliding layer stops reading the first positions once the context passes its window:
        // the protection would hold rows nothing reads.
        return spec_error(where + "sink=" + std::to_string(p.sink) + " on a sliding-window layer (window " +
                              std::to_string(c.sliding_window) + ") protects positions it stops reading",
                          "set sink= only for the global layers, e.g. layers=global:k=q4_0,v=q4_0,sink=4");
      }
      if (p.pre_rope && c.rope_local) {
        return spec_error(where +
                              "prerope=1 re-ropes keys with one RoPE, and this model's sliding and global layers "
                              "use two (Gemma 3)",
                          "drop prerope=1");
      }
      if (p.pre_rope && c.rope.is_longrope()) {
        // The set LongRoPE runs is the run's choice (model/forward.h); a cache re-roping keys
        // would need that choice too, which it is not given.
        return spec_error(
            where + "prerope=1 re-ropes keys, and this model's LongRoPE factors depend on the run's context",
            "drop prerope=1");
      }
    }
  }
  return Status::Ok();
}

Expected<CacheConfig> CacheConfig::FromArgument(const std::string& arg, std::string_view origin) {
  if (arg.empty() || arg[0] != '@') return Parse(arg, origin);
  const std::string path = arg.substr(1);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return BadInput(path + ": cannot open cache configuration file; hint: " + std::string(origin) +
                    " @FILE takes a JSON file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return BadInput(path + ": not a JSON object; hint: see docs/formats.md for the cache configuration file format");
  }
  // The JSON form maps one-to-one onto the spec grammar; we build the spec and parse it once.
  auto scalar = [&](const nlohmann::json& v, const std::string& key) -> Expected<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    if (v.is_boolean()) return std::string(v.get<bool>() ? "1" : "0");
    return BadInput(path + ": key '" + key +
                    "' must be a string, integer or boolean; hint: e.g. \"k\": \"q4_0\", \"rot\": 1 (docs/formats.md)");
  };
  auto settings = [&](const nlohmann::json& obj, bool allow_selector) -> Expected<std::string> {
    std::string out, layers, heads;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (it.key() == "overrides") continue;
      KV_ASSIGN_OR_RETURN(std::string value, scalar(it.value(), it.key()));
      if (it.key() == "layers" || it.key() == "heads") {
        if (!allow_selector) {
          return BadInput(path + ": '" + it.key() +
                          "' belongs inside an entry of \"overrides\"; hint: \"overrides\": [{\"layers\": \"0-1\", "
                          "\"k\": \"f16\"}]");
        }
        (it.key() == "layers" ? layers : heads) = value;
        continue;
      }
      out += (out.empty() ? "" : ",") + it.key() + "=" + value;
    }
    if (allow_selector) {
      if (layers.empty())
        return BadInput(path +
                        ": an override needs \"layers\"; hint: e.g. {\"layers\": \"0-1\", \"k\": \"f16\"} (a layer, a "
                        "range or a comma list)");
      return "layers=" + layers + (heads.empty() ? "" : ",heads=" + heads) + ":" + out;
    }
    return out;
  };
  KV_ASSIGN_OR_RETURN(std::string spec, settings(j, false));
  if (j.contains("overrides")) {
    if (!j["overrides"].is_array())
      return BadInput(path + ": \"overrides\" must be an array; hint: \"overrides\": [{\"layers\": \"0\", ...}, ...]");
    for (const auto& ov : j["overrides"]) {
      if (!ov.is_object())
        return BadInput(
            path + ": each override must be an object; hint: {\"layers\": \"0-1\", \"k\": \"f16\", \"v\": \"f16\"}");
      KV_ASSIGN_OR_RETURN(std::string seg, settings(ov, true));
      spec += ";" + seg;
    }
  }
  if (spec.empty()) spec = "k=f32,v=f32";
  // The spec's own error (an unknown format, a bad value) says what; the file says where.
  auto config = Parse(spec, origin);
  if (!config.ok()) return BadInput(path + ": " + config.error().message);
  return config;
}

}  // namespace kvaudit
