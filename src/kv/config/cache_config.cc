#include "kv/config/cache_config.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <span>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/edit_distance.h"
#include "base/trim.h"
#include "model/config.h"

namespace kvaudit {
namespace {

// "kv" is shorthand for k and v; "engine" is global only. KvSettings::Print writes them in this order.
constexpr std::string_view kKeyList = "k, v, kv, scale, scale_by, group, recent, sink, rot, outliers, prerope, engine";
// Every format name, in table order (the hint of an unknown format).
std::string FormatList() {
  std::string s;
  for (const FormatRow& row : FormatTable()) s += (s.empty() ? "" : ", ") + std::string(row.name);
  return s;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(std::string(TrimSpace(s.substr(start, i - start))));
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

Error SpecError(std::string_view origin, std::string_view where, const std::string& what, const std::string& hint) {
  return BadInput(std::string(origin) + " \"" + std::string(where) + "\": " + what + "; hint: " + hint);
}

// One grammar error site: the origin and the whole spec, for SpecError.
struct SpecText {
  std::string_view origin, where;
  Error operator()(const std::string& what, const std::string& hint) const {
    return SpecError(origin, where, what, hint);
  }
};

Expected<IndexRange> ParseRange(const std::string& text, const SpecText& err) {
  IndexRange r;
  const size_t dash = text.find('-');
  bool ok = dash == std::string::npos
                ? ParseInt(text, r.first) && ParseInt(text, r.last)
                : ParseInt(text.substr(0, dash), r.first) && ParseInt(text.substr(dash + 1), r.last);
  if (!ok || r.first < 0 || r.last < r.first) {
    return err("bad range '" + text + "'", "write N or N-M with N <= M, e.g. layers=0-3");
  }
  return r;
}

Expected<int> NonNegative(const std::string& key, const std::string& value, const SpecText& err) {
  int n = 0;
  if (!ParseInt(value, n) || n < 0)
    return err(key + "=" + value + " is not a non-negative integer", "e.g. " + key + "=4");
  return n;
}

// The spellings of the named values, indexed by their enums (Fp8ScaleMode, Fp8ScaleBy, RotationMode,
// AttentionMode, prerope's bool): the parser reads them and the printer writes them.
constexpr std::string_view kScaleNames[] = {"unit", "calib", "dynamic", "ckpt"};
constexpr std::string_view kScaleByNames[] = {"layer", "head"};
constexpr std::string_view kRotNames[] = {"auto", "0", "1"};
constexpr std::string_view kAttentionNames[] = {"native", "llama.cpp"};
constexpr std::string_view kBoolNames[] = {"0", "1"};

// One of a key's named values: the index of `value` in `names`, or the error.
Expected<int> OneOf(const std::string& key, const std::string& value, std::span<const std::string_view> names,
                    const std::string& what, const std::string& hint, const SpecText& err) {
  int i = 0;
  for (std::string_view n : names) {
    if (value == n) return i;
    ++i;
  }
  return err(key + "=" + value + what, hint);
}

// "did you mean q4_0? " for a name within two edits of a format's (the first such in the table).
std::string NearestFormat(std::string_view given) {
  std::string_view best;
  size_t best_distance = 3;
  for (const FormatRow& row : FormatTable()) {
    const size_t d = EditDistance(given, row.name);
    if (d < best_distance) best = row.name, best_distance = d;
  }
  return best.empty() ? "" : "did you mean " + std::string(best) + "? ";
}

// Sets `key` (a non-engine key, "kv" already expanded) in s from its text.
Status ParseSetting(KvSettings& s, const std::string& key, const std::string& value, const SpecText& err) {
  if (key == "k" || key == "v") {
    auto f = KvFormatFromName(value);
    if (!f) {
      return err("unknown format '" + value + "'",
                 NearestFormat(value) + "formats: " + FormatList() + " (kvaudit formats)");
    }
    (key == "k" ? s.k : s.v) = *f;
  } else if (key == "scale") {
    KV_ASSIGN_OR_RETURN(int i, OneOf(key, value, kScaleNames, " is not a scale mode",
                                     "use scale=unit, scale=calib, scale=dynamic or scale=ckpt", err));
    s.scale = static_cast<Fp8ScaleMode>(i);
  } else if (key == "scale_by") {
    KV_ASSIGN_OR_RETURN(int i,
                        OneOf(key, value, kScaleByNames, " is not valid", "use scale_by=layer or scale_by=head", err));
    s.scale_by = static_cast<Fp8ScaleBy>(i);
  } else if (key == "rot") {
    KV_ASSIGN_OR_RETURN(int i, OneOf(key, value, kRotNames, " is not valid", "use rot=0, rot=1 or rot=auto", err));
    s.rot = static_cast<RotationMode>(i);
  } else if (key == "prerope") {
    KV_ASSIGN_OR_RETURN(int i, OneOf(key, value, kBoolNames, " is not valid", "use prerope=0 or prerope=1", err));
    s.pre_rope = i == 1;
  } else if (key == "group" || key == "recent" || key == "sink" || key == "outliers") {
    KV_ASSIGN_OR_RETURN(int n, NonNegative(key, value, err));
    if (key == "group" && n == 0) return err("group=0", "group must be at least 1");
    (key == "group" ? s.group : key == "recent" ? s.recent : key == "sink" ? s.sink : s.outliers) = n;
  } else {
    return err("unknown key '" + key + "'", "keys: " + std::string(kKeyList));
  }
  return Status::Ok();
}

// The layer kinds a selector may name instead of a range, indexed by LayerKind (kAny has none).
constexpr std::string_view kLayerKindNames[] = {"", "global", "sliding", "ends"};

// The selector of an override segment ("layers=A-B", "layers=sliding", either with ",heads=C-D").
Status ParseSelector(const std::string& text, IndexRange& layers, LayerKind& kind, IndexRange& heads,
                     const SpecText& err) {
  std::set<std::string> given;  // a second layers= or heads= would silently replace the first
  for (const std::string& part : Split(text, ',')) {
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key != "layers" && key != "heads") {
      return err("selector key '" + key + "'",
                 "a selector is layers=A-B, layers=global, layers=sliding or layers=ends, optionally with ,heads=C-D");
    }
    if (!given.insert(key).second) {
      return err("'" + key + "=' given twice in one selector",
                 "write one layers= (a range, global, sliding or ends) and at most one heads=");
    }
    if (key == "layers" &&
        (value == kLayerKindNames[1] || value == kLayerKindNames[2] || value == kLayerKindNames[3])) {
      kind = value == kLayerKindNames[1]   ? LayerKind::kGlobal
             : value == kLayerKindNames[2] ? LayerKind::kSliding
                                           : LayerKind::kEnds;
      continue;
    }
    KV_ASSIGN_OR_RETURN(IndexRange r, ParseRange(value, err));
    (key == "layers" ? layers : heads) = r;
  }
  return Status::Ok();
}

// One segment's key=value list into s ("kv" expands to k and v; kv=<TurboQuant preset> to the
// preset's K and V formats, and sets *preset). engine= goes to *attention where the segment may
// set it (the first), and is an error elsewhere.
Status ParseKeys(const std::string& text, const SpecText& err, KvSettings& s, std::optional<AttentionMode>* attention,
                 const TurboQuantPreset** preset = nullptr) {
  std::set<std::string> given;  // the keys of this segment, "kv" expanded
  for (const std::string& kv : Split(text, ',')) {
    const size_t eq = kv.find('=');
    if (kv.empty() || eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      return err("'" + kv + "' is not key=value", "e.g. k=q4_0,v=q4_0");
    }
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    const TurboQuantPreset* tq = key == "kv" ? TurboQuantPresetNamed(value) : nullptr;
    if (tq && preset) *preset = tq;
    for (const std::string& k : key == "kv" ? std::vector<std::string>{"k", "v"} : std::vector<std::string>{key}) {
      if (!given.insert(k).second) return err("key '" + k + "' given twice in one segment", "give each key once");
      if (tq) {
        (k == "k" ? s.k : s.v) = k == "k" ? tq->k : tq->v;
      } else if (k != "engine") {
        KV_RETURN_IF_ERROR(ParseSetting(s, k, value, err));
      } else if (!attention) {
        return err("engine is global", "put engine=... in the first segment");
      } else {
        KV_ASSIGN_OR_RETURN(int i, OneOf("engine", value, kAttentionNames, " is not known",
                                         "use engine=native or engine=llama.cpp", err));
        *attention = static_cast<AttentionMode>(i);
      }
    }
  }
  return Status::Ok();
}

// vLLM's TurboQuant end layers: the model dtype, bf16 for nearly every current checkpoint.
KvSettings TurboQuantEndLayers() {
  KvSettings full;
  full.k = full.v = KvFormat::kBF16;
  return full;
}

std::string RangeText(const IndexRange& r) {
  return r.first == r.last ? std::to_string(r.first) : std::to_string(r.first) + "-" + std::to_string(r.last);
}

}  // namespace

void KvSettings::ApplyTo(HeadConfig& p) const {
  if (k) p.k = *k;
  if (v) p.v = *v;
  if (scale) p.scale = *scale;
  if (scale_by) p.scale_by = *scale_by;
  if (group) p.group = *group;
  if (recent) p.recent = *recent;
  if (sink) p.sink = *sink;
  if (rot) p.rot = *rot;
  if (outliers) p.outliers = *outliers;
  if (pre_rope) p.pre_rope = *pre_rope;
}

void KvSettings::Overlay(const KvSettings& over) {
  if (over.k) k = over.k;
  if (over.v) v = over.v;
  if (over.scale) scale = over.scale;
  if (over.scale_by) scale_by = over.scale_by;
  if (over.group) group = over.group;
  if (over.recent) recent = over.recent;
  if (over.sink) sink = over.sink;
  if (over.rot) rot = over.rot;
  if (over.outliers) outliers = over.outliers;
  if (over.pre_rope) pre_rope = over.pre_rope;
}

std::string KvSettings::Print() const {
  std::string out;
  auto put = [&out](std::string_view key, std::string_view value) {
    out += (out.empty() ? "" : ",") + std::string(key) + "=" + std::string(value);
  };
  if (k) put("k", KvFormatName(*k));
  if (v) put("v", KvFormatName(*v));
  if (scale) put("scale", kScaleNames[static_cast<int>(*scale)]);
  if (scale_by) put("scale_by", kScaleByNames[static_cast<int>(*scale_by)]);
  if (group) put("group", std::to_string(*group));
  if (recent) put("recent", std::to_string(*recent));
  if (sink) put("sink", std::to_string(*sink));
  if (rot) put("rot", kRotNames[static_cast<int>(*rot)]);
  if (outliers) put("outliers", std::to_string(*outliers));
  if (pre_rope) put("prerope", kBoolNames[*pre_rope ? 1 : 0]);
  return out;
}

Expected<KvSettings> KvSettings::Parse(std::string_view text, std::string_view origin) {
  const std::string where(TrimSpace(text));
  KvSettings s;
  KV_RETURN_IF_ERROR(ParseKeys(where, SpecText{origin, where}, s, nullptr));
  return s;
}

Expected<CacheConfig> CacheConfig::Parse(std::string_view spec, std::string_view origin) {
  CacheConfig config;
  config.origin_ = std::string(origin);
  const std::string where(TrimSpace(spec));
  const SpecText err{origin, where};
  if (where.empty()) return err("empty cache spec", "e.g. " + std::string(origin) + " k=q8_0,v=q8_0");
  const std::vector<std::string> segments = Split(where, ';');
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string& seg = segments[s];
    if (seg.empty()) return err("empty segment between ';'", "remove the extra ';'");
    std::string settings_text = seg;
    Override ov;
    const bool has_selector = seg.rfind("layers=", 0) == 0;
    if (has_selector) {
      const size_t colon = seg.find(':');
      if (colon == std::string::npos)
        return err("'" + seg + "' has no ':' after its selector", "write layers=0-1:k=f16,v=f16");
      KV_RETURN_IF_ERROR(ParseSelector(seg.substr(0, colon), ov.layers, ov.kind, ov.heads, err));
      settings_text = seg.substr(colon + 1);
    } else if (s > 0) {
      return err("segment '" + seg + "' has no layers= selector",
                 "only the first segment sets defaults; later ones start with layers=A-B:");
    }
    const TurboQuantPreset* preset = nullptr;
    KV_RETURN_IF_ERROR(ParseKeys(settings_text, err, has_selector ? ov.settings : config.defaults_,
                                 has_selector ? nullptr : &config.attention_written_, &preset));
    if (has_selector) config.overrides_.push_back(std::move(ov));
    // kv=<TurboQuant preset> as the defaults is what vLLM runs for that --kv-cache-dtype: its end
    // layers unquantized, in the model dtype (bf16 for nearly every current checkpoint; write
    // the two formats and your own layers=ends override for an f16 model).
    if (preset && !has_selector)
      config.overrides_.push_back({IndexRange{0, -1}, IndexRange{0, -1}, LayerKind::kEnds, TurboQuantEndLayers()});
  }
  // A spec that starts with a selector has f32 defaults (HeadConfig's), written out so that the
  // printed spec parses back to this value.
  if (segments[0].rfind("layers=", 0) == 0) config.defaults_.k = config.defaults_.v = KvFormat::kF32;
  config.attention_ = config.attention_written_.value_or(AttentionMode::kNative);
  config.spec_ = config.Print();
  return config;
}

std::string CacheConfig::Print() const {
  std::string out = defaults_.Print();
  if (attention_written_) {
    out += std::string(out.empty() ? "" : ",") +
           "engine=" + std::string(kAttentionNames[static_cast<int>(*attention_written_)]);
  }
  for (const Override& ov : overrides_) {
    out += ";layers=" + (ov.kind == LayerKind::kAny ? RangeText(ov.layers)
                                                    : std::string(kLayerKindNames[static_cast<int>(ov.kind)]));
    if (!(ov.heads.first == 0 && ov.heads.last < 0)) out += ",heads=" + RangeText(ov.heads);
    out += ":" + ov.settings.Print();
  }
  return out;
}

CacheConfig CacheConfig::F32() {
  Expected<CacheConfig> f32 = Parse("k=f32,v=f32");
  KV_CHECK_MSG(f32.ok(), "the f32 spec parses");
  return std::move(f32).value();
}

CacheConfig CacheConfig::Uniform(KvSettings defaults, std::optional<AttentionMode> attention) {
  CacheConfig config;
  config.defaults_ = std::move(defaults);
  config.attention_written_ = attention;
  config.attention_ = attention.value_or(AttentionMode::kNative);
  config.spec_ = config.Print();
  return config;
}

CacheConfig CacheConfig::WithLayers(IndexRange layers, KvSettings settings) const {
  KV_CHECK_MSG(!settings.empty() && layers.first >= 0 && layers.first <= layers.last,
               "an override writes a key over a closed layer range");
  CacheConfig config = *this;
  config.overrides_.push_back({layers, IndexRange{0, -1}, LayerKind::kAny, std::move(settings)});
  config.spec_ = config.Print();
  return config;
}

CacheConfig CacheConfig::OfTurboQuantPreset(const TurboQuantPreset& preset) {
  KvSettings pair;
  pair.k = preset.k, pair.v = preset.v;
  return Uniform(pair).WithLayerKind(LayerKind::kEnds, TurboQuantEndLayers());
}

CacheConfig CacheConfig::WithLayerKind(LayerKind kind, KvSettings settings) const {
  KV_CHECK_MSG(!settings.empty() && kind != LayerKind::kAny, "a kind override writes a key over one kind of layer");
  CacheConfig config = *this;
  config.overrides_.push_back({IndexRange{0, -1}, IndexRange{0, -1}, kind, std::move(settings)});
  config.spec_ = config.Print();
  return config;
}

std::vector<KvSettings> CacheConfig::Segments() const {
  std::vector<KvSettings> out = {defaults_};
  for (const Override& ov : overrides_) out.push_back(ov.settings);
  return out;
}

CacheConfig CacheConfig::WithAttention(AttentionMode attention) const {
  CacheConfig config = *this;
  config.attention_written_ = attention;
  config.attention_ = attention;
  config.spec_ = config.Print();
  return config;
}

CacheConfig CacheConfig::WithoutScales() const {
  CacheConfig config = *this;
  config.defaults_.scale.reset(), config.defaults_.scale_by.reset();
  std::vector<Override> kept;
  for (Override ov : overrides_) {
    ov.settings.scale.reset(), ov.settings.scale_by.reset();
    if (!ov.settings.empty()) kept.push_back(std::move(ov));  // an override of scales alone goes
  }
  config.overrides_ = std::move(kept);
  config.spec_ = config.Print();
  return config;
}

bool CacheConfig::KindMatches(LayerKind kind, int layer, bool sliding, int n_layers) {
  switch (kind) {
    case LayerKind::kAny: return true;
    case LayerKind::kGlobal: return !sliding;
    case LayerKind::kSliding: return sliding;
    case LayerKind::kEnds:
      KV_CHECK_MSG(n_layers >= 0, "a layers=ends selector needs the model's layer count");
      return IsEndLayer(layer, n_layers);
  }
  return false;
}

bool CacheConfig::Covers(const Override& ov, const ModelConfig& model, int layer) {
  return ov.layers.Contains(layer) && KindMatches(ov.kind, layer, model.is_sliding(layer), model.n_layers);
}

HeadConfig CacheConfig::ForHeadIn(int layer, int kv_head, bool sliding, int n_layers) const {
  HeadConfig p;
  defaults_.ApplyTo(p);
  for (const Override& ov : overrides_) {
    if (ov.layers.Contains(layer) && KindMatches(ov.kind, layer, sliding, n_layers) && ov.heads.Contains(kv_head)) {
      ov.settings.ApplyTo(p);
      break;
    }
  }
  return p;
}

HeadConfig CacheConfig::ForHead(int layer, int kv_head, bool sliding) const {
  return ForHeadIn(layer, kv_head, sliding, -1);
}

HeadConfig CacheConfig::ForHead(const ModelConfig& model, int layer, int kv_head) const {
  return ForHeadIn(layer, kv_head, model.is_sliding(layer), model.n_layers);
}

HeadConfig CacheConfig::ForHead(int layer, int kv_head) const {
  KV_CHECK_MSG(!HasLayerKinds(), "a layers=global|sliding|ends selector needs the model");
  return ForHeadIn(layer, kv_head, false, -1);
}

bool CacheConfig::HasLayerKinds() const {
  return std::any_of(overrides_.begin(), overrides_.end(),
                     [](const Override& ov) { return ov.kind != LayerKind::kAny; });
}

bool CacheConfig::IsPlainF32() const {
  if (!overrides_.empty()) return false;
  const HeadConfig p = ForHead(0, 0);
  return attention_ == AttentionMode::kNative && p.k == KvFormat::kF32 && p.v == KvFormat::kF32;
}

}  // namespace kvaudit
