#include "kv/policy/cache_policy.h"

#include <array>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/config.h"

namespace kvaudit {
namespace {

// Keys in canonical order. "kv" is shorthand for k and v; "engine" is global only.
constexpr std::array<std::string_view, 11> kKeys = {"k",    "v",   "scale",    "scale_by", "group", "recent",
                                                    "sink", "rot", "outliers", "prerope",  "engine"};
constexpr std::string_view kKeyList = "k, v, kv, scale, scale_by, group, recent, sink, rot, outliers, prerope, engine";
constexpr std::string_view kFormatList =
    "f32, f16, bf16, fp8_e4m3, fp8_e5m2, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, kivi2, kivi4, int8, int4";

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(Trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

bool ParseInt(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

Error SpecError(std::string_view where, const std::string& what, const std::string& hint) {
  return BadInput("--kv \"" + std::string(where) + "\": " + what + "; hint: " + hint);
}

Expected<InclusiveRange> ParseRange(const std::string& text, std::string_view where) {
  InclusiveRange r;
  const size_t dash = text.find('-');
  bool ok = dash == std::string::npos
                ? ParseInt(text, r.first) && ParseInt(text, r.last)
                : ParseInt(text.substr(0, dash), r.first) && ParseInt(text.substr(dash + 1), r.last);
  if (!ok || r.first < 0 || r.last < r.first) {
    return SpecError(where, "bad range '" + text + "'", "write N or N-M with N <= M, e.g. layers=0-3");
  }
  return r;
}

Expected<int> NonNegative(const std::string& key, const std::string& value, std::string_view where) {
  int n = 0;
  if (!ParseInt(value, n) || n < 0) {
    return SpecError(where, key + "=" + value + " is not a non-negative integer", "e.g. " + key + "=4");
  }
  return n;
}

}  // namespace

Status CachePolicy::ApplySetting(HeadPolicy& p, const std::string& key, const std::string& value,
                                 std::string_view where) {
  if (key == "k" || key == "v") {
    auto f = KvFormatFromName(value);
    if (!f)
      return SpecError(where, "unknown format '" + value + "'",
                       "formats: " + std::string(kFormatList) + " (kvaudit formats)");
    (key == "k" ? p.k : p.v) = *f;
  } else if (key == "scale") {
    if (value == "unit")
      p.scale = Fp8ScaleMode::kUnit;
    else if (value == "calib")
      p.scale = Fp8ScaleMode::kCalib;
    else if (value == "dynamic")
      p.scale = Fp8ScaleMode::kDynamic;
    else
      return SpecError(where, "scale=" + value + " is not a scale mode",
                       "use scale=unit, scale=calib or scale=dynamic");
  } else if (key == "scale_by") {
    if (value == "layer")
      p.scale_by = Fp8ScaleBy::kLayer;
    else if (value == "head")
      p.scale_by = Fp8ScaleBy::kHead;
    else
      return SpecError(where, "scale_by=" + value + " is not valid", "use scale_by=layer or scale_by=head");
  } else if (key == "rot") {
    if (value == "0")
      p.rot = RotationMode::kOff;
    else if (value == "1")
      p.rot = RotationMode::kOn;
    else if (value == "auto")
      p.rot = RotationMode::kAuto;
    else
      return SpecError(where, "rot=" + value + " is not valid", "use rot=0, rot=1 or rot=auto");
  } else if (key == "prerope") {
    if (value != "0" && value != "1")
      return SpecError(where, "prerope=" + value + " is not valid", "use prerope=0 or prerope=1");
    p.pre_rope = value == "1";
  } else if (key == "group" || key == "recent" || key == "sink" || key == "outliers") {
    KV_ASSIGN_OR_RETURN(int n, NonNegative(key, value, where));
    if (key == "group") {
      if (n == 0) return SpecError(where, "group=0", "group must be at least 1");
      p.group = n;
    } else if (key == "recent") {
      p.recent = n;
    } else if (key == "sink") {
      p.sink = n;
    } else {
      p.outliers = n;
    }
  } else {
    return SpecError(where, "unknown key '" + key + "'", "keys: " + std::string(kKeyList));
  }
  return Status::Ok();
}

std::string CachePolicy::Canonical(const std::map<std::string, std::string>& settings) {
  std::string out;
  for (std::string_view key : kKeys) {
    auto it = settings.find(std::string(key));
    if (it == settings.end()) continue;
    if (!out.empty()) out += ",";
    out += it->first + "=" + it->second;
  }
  return out;
}

Expected<CachePolicy> CachePolicy::Parse(std::string_view spec) {
  CachePolicy policy;
  const std::string where = Trim(spec);
  if (where.empty()) return SpecError(where, "empty cache spec", "e.g. --kv k=q8_0,v=q8_0");
  const std::vector<std::string> segments = Split(where, ';');
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string& seg = segments[s];
    if (seg.empty()) return SpecError(where, "empty segment between ';'", "remove the extra ';'");
    std::string settings_text = seg;
    Override ov;
    const bool has_selector = seg.rfind("layers=", 0) == 0;
    if (has_selector) {
      const size_t colon = seg.find(':');
      if (colon == std::string::npos) {
        return SpecError(where, "'" + seg + "' has no ':' after its selector", "write layers=0-1:k=f16,v=f16");
      }
      for (const std::string& part : Split(seg.substr(0, colon), ',')) {
        const size_t eq = part.find('=');
        const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
        if (key != "layers" && key != "heads") {
          return SpecError(where, "selector key '" + key + "'", "a selector is layers=A-B or layers=A-B,heads=C-D");
        }
        KV_ASSIGN_OR_RETURN(InclusiveRange r, ParseRange(value, where));
        (key == "layers" ? ov.layers : ov.heads) = r;
      }
      settings_text = seg.substr(colon + 1);
    } else if (s > 0) {
      return SpecError(where, "segment '" + seg + "' has no layers= selector",
                       "only the first segment sets defaults; later ones start with layers=A-B:");
    }
    std::map<std::string, std::string> settings;
    for (const std::string& kv : Split(settings_text, ',')) {
      const size_t eq = kv.find('=');
      if (kv.empty() || eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
        return SpecError(where, "'" + kv + "' is not key=value", "e.g. k=q4_0,v=q4_0");
      }
      const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
      std::vector<std::string> keys = key == "kv" ? std::vector<std::string>{"k", "v"} : std::vector<std::string>{key};
      for (const std::string& k : keys) {
        if (settings.count(k))
          return SpecError(where, "key '" + k + "' given twice in one segment", "give each key once");
        if (k == "engine") {
          if (has_selector) return SpecError(where, "engine is global", "put engine=... in the first segment");
          if (value == "llama.cpp")
            policy.engine_ = AttentionEngine::kLlamaCpp;
          else if (value == "native")
            policy.engine_ = AttentionEngine::kNative;
          else
            return SpecError(where, "engine=" + value + " is not known", "use engine=native or engine=llama.cpp");
        } else {
          HeadPolicy scratch;
          KV_RETURN_IF_ERROR(ApplySetting(scratch, k, value, where));
        }
        settings[k] = value;
      }
    }
    if (has_selector) {
      ov.settings = std::move(settings);
      policy.overrides_.push_back(std::move(ov));
    } else {
      policy.defaults_ = std::move(settings);
    }
  }
  policy.spec_ = policy.defaults_.empty() ? "k=f32,v=f32" : Canonical(policy.defaults_);
  for (const Override& ov : policy.overrides_) {
    auto range = [](const InclusiveRange& r) {
      return r.first == r.last ? std::to_string(r.first) : std::to_string(r.first) + "-" + std::to_string(r.last);
    };
    policy.spec_ += ";layers=" + range(ov.layers);
    if (!(ov.heads.first == 0 && ov.heads.last < 0)) policy.spec_ += ",heads=" + range(ov.heads);
    policy.spec_ += ":" + Canonical(ov.settings);
  }
  return policy;
}

CachePolicy CachePolicy::F32() {
  Expected<CachePolicy> f32 = Parse("k=f32,v=f32");
  KV_CHECK_MSG(f32.ok(), "the f32 spec parses");
  return std::move(f32).value();
}

HeadPolicy CachePolicy::ForHead(int layer, int kv_head) const {
  HeadPolicy p;
  for (const auto& [k, v] : defaults_) {
    if (k != "engine") KV_CHECK(ApplySetting(p, k, v, spec_).ok());
  }
  for (const Override& ov : overrides_) {
    if (ov.layers.Contains(layer, 1 << 30) && ov.heads.Contains(kv_head, 1 << 30)) {
      for (const auto& [k, v] : ov.settings) KV_CHECK(ApplySetting(p, k, v, spec_).ok());
      break;
    }
  }
  return p;
}

bool CachePolicy::IsPlainF32() const {
  const HeadPolicy p = ForHead(0, 0);
  return overrides_.empty() && engine_ == AttentionEngine::kNative && p.k == KvFormat::kF32 && p.v == KvFormat::kF32;
}

}  // namespace kvaudit
