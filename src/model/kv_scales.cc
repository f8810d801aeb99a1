#include "model/kv_scales.h"

#include <cmath>
#include <vector>

#include "io/dequantize.h"
#include "io/safetensors.h"

namespace kvaudit {
namespace {

// One naming scheme: the K and V tensor names below model.layers.N.self_attn. (the same name for
// both: one tensor for K and V).
struct Scheme {
  const char* k;
  const char* v;
};
constexpr Scheme kSchemes[] = {{"k_scale", "v_scale"}, {"k_proj.k_scale", "v_proj.v_scale"}, {"kv_scale", "kv_scale"}};

std::string Name(int layer, const char* tensor) {
  return "model.layers." + std::to_string(layer) + ".self_attn." + tensor;
}

// The values of one scale tensor: per tensor or per KV head, positive and finite.
Expected<std::vector<float>> ScaleValues(const TensorView& t, const ModelConfig& c, const std::string& path) {
  const int64_t n = t.numel();
  if (n != 1 && n != c.n_kv_heads) {
    return BadInput(path + ": " + t.name + " has " + std::to_string(n) + " values; hint: a KV scale holds one value " +
                    "or one per KV head (" + std::to_string(c.n_kv_heads) + ")");
  }
  std::vector<float> out(static_cast<size_t>(n));  // [n]
  KV_RETURN_IF_ERROR(DequantizeToF32(t, out.data()));
  for (float x : out) {
    if (!std::isfinite(x) || x <= 0.0f) {
      return BadInput(path + ": " + t.name + " holds " + std::to_string(x) +
                      "; hint: a KV scale is a positive finite number (re-export the checkpoint's scales)");
    }
  }
  return out;
}

}  // namespace

Expected<CheckpointKvScales> ReadCheckpointKvScales(const SafetensorsSet& st, const ModelConfig& c,
                                                    const std::string& path) {
  CheckpointKvScales out;
  for (const Scheme& s : kSchemes) {
    bool any = false;  // some layer has this scheme's K tensor: then every layer must
    for (int l = 0; l < c.n_layers && !any; ++l) any = st.Find(Name(l, s.k)) != nullptr;
    if (!any) continue;
    // One layer's tensor: present, of the scheme's one granularity.
    auto read = [&](int l, const char* tensor) -> Expected<std::vector<float>> {
      const TensorView* t = st.Find(Name(l, tensor));
      if (t == nullptr) {
        return BadInput(path + ": " + Name(l, tensor) + " is missing while other layers have their " + tensor +
                        "; hint: an engine would run this layer's cache at scale 1.0; re-export the scales for every "
                        "layer");
      }
      KV_ASSIGN_OR_RETURN(std::vector<float> v, ScaleValues(*t, c, path));
      if (out.per_layer == 0) out.per_layer = static_cast<int>(v.size());
      if (static_cast<int>(v.size()) != out.per_layer) {
        return BadInput(path + ": " + t->name + " has " + std::to_string(v.size()) + " values and " + Name(0, s.k) +
                        " " + std::to_string(out.per_layer) +
                        "; hint: one granularity (per tensor or per KV head) for every scale");
      }
      return v;
    };
    const bool shared = std::string(s.k) == s.v;  // the deprecated kv_scale: K and V alike
    for (int l = 0; l < c.n_layers; ++l) {
      KV_ASSIGN_OR_RETURN(const std::vector<float> k, read(l, s.k));
      out.k.insert(out.k.end(), k.begin(), k.end());
      if (shared) {
        out.v.insert(out.v.end(), k.begin(), k.end());
        continue;
      }
      KV_ASSIGN_OR_RETURN(const std::vector<float> v, read(l, s.v));
      out.v.insert(out.v.end(), v.begin(), v.end());
    }
    out.source = "model.layers.N.self_attn." + std::string(s.k) + (shared ? "" : std::string(" / ") + s.v);
    return out;
  }
  return out;  // no KV scales: an unquantized checkpoint
}

}  // namespace kvaudit
