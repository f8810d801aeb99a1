#include "decide/search/mix_spec.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "base/trim.h"
#include "decide/targets/kv_cells.h"
#include "kv/make_cache.h"

namespace kvaudit {
namespace {

// Modifier keys a candidate may carry (docs/formats.md, the --kv table; k, v and kv name the
// tensor's format, engine is read apart).
constexpr std::string_view kModifierKeys[] = {"scale", "scale_by", "group",    "recent",
                                              "sink",  "rot",      "outliers", "prerope"};

Error CandidateError(std::string_view text, const std::string& what, const std::string& hint) {
  return BadInput("candidate \"" + std::string(text) + "\": " + what + "; hint: " + hint);
}

// Calls f(&KvSettings::field) for every modifier, in the alphabetical order of their keys
// (group, outliers, prerope, recent, rot, scale, scale_by, sink): the order ShareLayer tries
// the choices of conflicting keys in.
template <class F>
void ForEachModifier(F f) {
  f(&KvSettings::group), f(&KvSettings::outliers), f(&KvSettings::pre_rope), f(&KvSettings::recent);
  f(&KvSettings::rot), f(&KvSettings::scale), f(&KvSettings::scale_by), f(&KvSettings::sink);
}

// The configuration of one (layer, head) that writes `settings` (k, v, modifiers).
HeadConfig HeadOf(const KvSettings& settings) {
  HeadConfig p;
  settings.ApplyTo(p);
  return p;
}

// The settings a candidate was measured with: its tensor quantized so, the other one at f16.
KvSettings Alone(const Candidate& c, char tensor) {
  KvSettings s = c.mods;
  s.k = s.v = KvFormat::kF16;
  (tensor == 'k' ? s.k : s.v) = c.format;
  return s;
}

// Reads the items after the format into c (engine=) and *mods (the modifiers' text, for the
// grammar to parse); the error (with its hint) of the first bad one.
std::optional<Error> ReadModifiers(std::string_view text, const std::vector<std::string>& items, char tensor,
                                   Candidate& c, std::string* mods) {
  std::set<std::string> keys;  // given so far
  for (size_t i = 1; i < items.size(); ++i) {
    const size_t eq = items[i].find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == items[i].size()) {
      return CandidateError(text, "'" + items[i] + "' is not key=value", "modifiers are key=value, e.g. q4_0,rot=1");
    }
    const std::string key = items[i].substr(0, eq), value = items[i].substr(eq + 1);
    if (key == "engine") {
      if (value != "native" && value != "llama.cpp") {
        return CandidateError(text, "engine=" + value + " is not known", "use engine=native or engine=llama.cpp");
      }
      c.attention = value == "native" ? AttentionMode::kNative : AttentionMode::kLlamaCpp;
      continue;
    }
    if (std::find(std::begin(kModifierKeys), std::end(kModifierKeys), key) == std::end(kModifierKeys)) {
      return CandidateError(text, "'" + key + "' is not a modifier",
                            "a candidate is one tensor's format and modifiers: scale, scale_by, group, recent, sink, "
                            "rot, outliers, prerope, engine");
    }
    if (tensor == 'v' && (key == "outliers" || key == "prerope")) {
      return CandidateError(text, key + "= acts on keys only, so a V candidate cannot carry it",
                            "give it to the K candidate of the layer");
    }
    if (!keys.insert(key).second) return CandidateError(text, "key '" + key + "' given twice", "give each key once");
    *mods += (mods->empty() ? "" : ",") + items[i];
  }
  return std::nullopt;
}

}  // namespace

Expected<Candidate> ParseCandidate(std::string_view text, char tensor) {
  KV_CHECK(tensor == 'k' || tensor == 'v');
  const std::string trimmed(TrimSpace(text));
  if (trimmed.empty()) return CandidateError(text, "empty", "e.g. q8_0 or q4_0,rot=1");
  std::vector<std::string> items;
  for (size_t start = 0;;) {
    const size_t comma = trimmed.find(',', start);
    items.push_back(std::string(
        TrimSpace(std::string_view(trimmed).substr(start, comma == std::string::npos ? comma : comma - start))));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  Candidate c;
  const auto format = KvFormatFromName(items[0]);
  if (!format) {
    return CandidateError(text, "'" + items[0] + "' is not a format",
                          "a candidate starts with a format name (kvaudit formats), e.g. q4_0,rot=1");
  }
  c.format = *format;
  std::string mods;
  if (auto error = ReadModifiers(text, items, tensor, c, &mods)) return *error;
  if (!mods.empty()) {
    // The values are checked by the --kv grammar itself; its message is given for the candidate.
    Expected<KvSettings> parsed = KvSettings::Parse(mods, "candidate");
    if (!parsed.ok()) {
      const std::string& m = parsed.error().message;
      const std::string prefix = "candidate \"" + mods + "\": ";
      return BadInput("candidate \"" + std::string(text) +
                      "\": " + (m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m));
    }
    c.mods = std::move(parsed).value();
  }
  c.text = std::string(KvFormatName(c.format)) + (mods.empty() ? "" : "," + c.mods.Print());
  if (c.attention) c.text += *c.attention == AttentionMode::kNative ? ",engine=native" : ",engine=llama.cpp";
  return c;
}

TensorStorage StorageOf(const HeadConfig& p, char tensor, AttentionMode attention) {
  TensorStorage s;
  s.format = tensor == 'k' ? p.k : p.v;
  if (IsFullPrecision(s.format)) return s;  // modifiers act on quantized tensors only (kv/store/row_store.cc)
  s.sink = p.sink;
  s.recent = p.Recent();
  // Native: rot=auto is off; engine=llama.cpp: auto rotates like rot=1 (docs/formats.md, `rot`).
  s.rotated = attention == AttentionMode::kNative ? p.rot == RotationMode::kOn : p.rot != RotationMode::kOff;
  if (HasTensorScale(s.format)) s.scale = p.scale, s.scale_by = p.scale_by;
  if (IsIntGroup(s.format)) s.group = p.IntGroup();
  if (IsKivi(s.format)) s.group = p.KiviGroup();
  if (tensor == 'k') s.outliers = p.outliers, s.pre_rope = p.pre_rope;
  return s;
}

TensorStorage StorageOf(const Candidate& c, char tensor, AttentionMode attention) {
  return StorageOf(HeadOf(Alone(c, tensor)), tensor, attention);
}

std::optional<KvSettings> ShareLayer(const Candidate& k, const Candidate& v, AttentionMode attention) {
  const TensorStorage want_k = StorageOf(k, 'k', attention), want_v = StorageOf(v, 'v', attention);
  KvSettings merged = k.mods;
  std::vector<std::function<void(KvSettings&)>> conflicts;  // [n] each sets V's value of a key K gives otherwise
  ForEachModifier([&](auto field) {
    const auto& theirs = v.mods.*field;
    auto& mine = merged.*field;
    if (!theirs) return;
    if (!mine) {
      mine = theirs;
    } else if (*mine != *theirs) {
      conflicts.push_back([field, theirs](KvSettings& t) { t.*field = theirs; });
    }
  });
  merged.k = k.format, merged.v = v.format;
  // A key both give differently can still be shared when it acts on one tensor only (group of an
  // int4 K beside a q4_0 V): try every choice of whose value each such key takes, K's first.
  KV_CHECK(conflicts.size() < 16);
  for (uint32_t mask = 0; mask < (1u << conflicts.size()); ++mask) {
    KvSettings trial = merged;
    for (size_t i = 0; i < conflicts.size(); ++i) {
      if (mask >> i & 1) conflicts[i](trial);
    }
    const HeadConfig p = HeadOf(trial);
    if (StorageOf(p, 'k', attention) == want_k && StorageOf(p, 'v', attention) == want_v) return trial;
  }
  return std::nullopt;
}

namespace {

// The keys a layer needs beyond the default segment `base` so that it stores K and V as `want`
// does, or nullopt when no override can (a key of the default that the layer lacks acts on it and
// has no explicit neutral value, e.g. group= beside int4 and KIVI tensors of default groups).
std::optional<KvSettings> OverrideFor(const KvSettings& base, const KvSettings& want, AttentionMode attention) {
  const HeadConfig target = HeadOf(want);
  const TensorStorage want_k = StorageOf(target, 'k', attention), want_v = StorageOf(target, 'v', attention);
  KvSettings out;  // the keys `want` writes that `base` does not write alike
  if (want.k && want.k != base.k) out.k = want.k;
  if (want.v && want.v != base.v) out.v = want.v;
  ForEachModifier([&](auto field) {
    if ((want.*field) && want.*field != base.*field) out.*field = want.*field;
  });
  auto stores_alike = [&](const KvSettings& over) {
    KvSettings layer = base;
    layer.Overlay(over);
    const HeadConfig p = HeadOf(layer);
    return StorageOf(p, 'k', attention) == want_k && StorageOf(p, 'v', attention) == want_v;
  };
  if (stores_alike(out)) return out;
  // Keys of the default the layer leaves unset, written back to what unset means for this layer
  // (group= has no such value).
  KvSettings neutral;
  neutral.scale = Fp8ScaleMode::kUnit, neutral.scale_by = Fp8ScaleBy::kLayer, neutral.sink = 0;
  neutral.rot = RotationMode::kAuto, neutral.outliers = 0, neutral.pre_rope = false, neutral.recent = target.Recent();
  ForEachModifier([&](auto field) {
    if ((base.*field) && !(want.*field) && !(out.*field) && (neutral.*field)) out.*field = neutral.*field;
  });
  if (stores_alike(out)) return out;
  return std::nullopt;
}

// The keys each layer needs beyond `over`'s default when they depend on the layer's kind alone:
// {global keys, sliding keys}; nullopt when two layers of one kind differ or no layer slides or
// every layer does.
std::optional<std::pair<KvSettings, KvSettings>> ByKind(const std::vector<KvSettings>& over,
                                                        const std::vector<bool>& sliding) {
  if (sliding.size() != over.size()) return std::nullopt;
  std::optional<KvSettings> kind[2];  // [global, sliding]
  for (size_t l = 0; l < over.size(); ++l) {
    std::optional<KvSettings>& k = kind[sliding[l] ? 1 : 0];
    if (k && *k != over[l]) return std::nullopt;
    k = over[l];
  }
  if (!kind[0] || !kind[1]) return std::nullopt;
  return std::pair(*kind[0], *kind[1]);
}

// The configurations with `base` as the default segment (none when some layer cannot be reached
// from it): consecutive layers that need the same keys share one override; and where those keys
// depend on the layer's kind alone, one override per kind.
std::vector<CacheConfig> RenderWithBase(const KvSettings& base, const std::vector<KvSettings>& layers,
                                        AttentionMode attention, const std::vector<bool>& sliding) {
  std::vector<KvSettings> over;  // [n_layers] keys beyond the default
  for (const KvSettings& want : layers) {
    auto o = OverrideFor(base, want, attention);
    if (!o) return {};
    over.push_back(std::move(*o));
  }
  // engine=native is the default and is not written (the search's candidates share one mode).
  const std::optional<AttentionMode> written =
      attention == AttentionMode::kLlamaCpp ? std::optional(attention) : std::nullopt;
  CacheConfig config = CacheConfig::Uniform(base, written);
  std::vector<CacheConfig> out;
  if (auto kinds = ByKind(over, sliding)) {
    CacheConfig by_kind = config;
    if (!kinds->first.empty()) by_kind = by_kind.WithLayerKind(LayerKind::kGlobal, kinds->first);
    if (!kinds->second.empty()) by_kind = by_kind.WithLayerKind(LayerKind::kSliding, kinds->second);
    out.push_back(std::move(by_kind));
  }
  const int n = static_cast<int>(layers.size());
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && over[j + 1] == over[i]) ++j;
    if (!over[i].empty()) config = config.WithLayers({i, j}, over[i]);
    i = j + 1;
  }
  out.insert(out.begin(), std::move(config));
  return out;
}

template <class Key>
const Candidate* MostCommon(const std::vector<LayerCandidates>& layers, Key key) {
  std::map<std::string, int> counts;
  for (const LayerCandidates& l : layers) ++counts[key(l)->text];
  const Candidate* best = key(layers.front());
  for (const LayerCandidates& l : layers) {  // the first in layer order wins a tie
    if (counts[key(l)->text] > counts[best->text]) best = key(l);
  }
  return best;
}

}  // namespace

CacheConfig RenderMixSpec(const std::vector<LayerCandidates>& layers, AttentionMode attention,
                          const std::vector<bool>& sliding) {
  KV_CHECK(!layers.empty() && (sliding.empty() || sliding.size() == layers.size()));
  std::vector<KvSettings> wanted;  // [n_layers] the settings of each layer
  for (const LayerCandidates& l : layers) {
    auto s = ShareLayer(*l.k, *l.v, attention);
    KV_CHECK_MSG(s.has_value(), ("K " + l.k->text + " and V " + l.v->text + " cannot share a layer").c_str());
    wanted.push_back(std::move(*s));
  }
  std::vector<KvSettings> bases;  // the default segments tried, in order
  const Candidate* k = MostCommon(layers, [](const LayerCandidates& l) { return l.k; });
  const Candidate* v = MostCommon(layers, [](const LayerCandidates& l) { return l.v; });
  if (auto s = ShareLayer(*k, *v, attention)) bases.push_back(std::move(*s));
  for (const KvSettings& w : wanted) {
    if (std::find(bases.begin(), bases.end(), w) == bases.end()) bases.push_back(w);
  }
  std::optional<CacheConfig> best;  // the shortest spec, the first tried on a tie
  for (const KvSettings& base : bases) {
    for (CacheConfig& config : RenderWithBase(base, wanted, attention, sliding)) {
      if (!best || config.spec().size() < best->spec().size()) best = std::move(config);
    }
  }
  // Some default always reaches every layer: only group= has no neutral value, and a layer that
  // lacks it is itself a default without it (when every layer sets group=, any default works).
  KV_CHECK(best.has_value());
  for (size_t i = 0; i < layers.size(); ++i) {
    const HeadConfig p = best->ForHead(static_cast<int>(i), 0, !sliding.empty() && sliding[i]);
    KV_CHECK_MSG(
        StorageOf(p, 'k', attention) == StorageOf(*layers[i].k, 'k', attention) &&
            StorageOf(p, 'v', attention) == StorageOf(*layers[i].v, 'v', attention),
        ("rendered spec " + best->spec() + " does not store layer " + std::to_string(i) + " as chosen").c_str());
  }
  return *best;
}

Expected<uint64_t> PartBytesPerToken(const ModelConfig& config, const Candidate& c, int layer, char tensor, int ctx,
                                     const KvCalibration* calib) {
  KV_CHECK(layer >= 0 && layer < config.n_layers && (tensor == 'k' || tensor == 'v') && ctx > 0);
  KvSettings f16, part = c.mods;
  f16.k = f16.v = KvFormat::kF16;
  (tensor == 'k' ? part.k : part.v) = c.format;
  // engine=native is not written (a format's bytes are the same under either mode).
  const std::optional<AttentionMode> written = c.attention == AttentionMode::kLlamaCpp ? c.attention : std::nullopt;
  const CacheConfig spec = CacheConfig::Uniform(f16, written).WithLayers({layer, layer}, part);
  KV_ASSIGN_OR_RETURN(auto cache, MakeCache(config, spec, calib, ctx));
  // An f16 tensor holds exactly 2 bytes per element and token (docs/formats.md), so the rest is a
  // whole number of bytes per token and the ceiling of bytes_per_token falls on this part alone.
  const uint64_t f16_tensor = 2ull * config.n_kv_heads * config.head_dim;
  const uint64_t rest = (2ull * config.n_layers - 1) * f16_tensor;
  KV_CHECK(cache->bytes_per_token() >= rest);
  const uint64_t per_position = cache->bytes_per_token() - rest;
  if (!config.is_sliding(layer)) return per_position;
  // A sliding-window layer holds only the positions its attention reads (kvaudit's accounting,
  // decide/targets/kv_cells.h SpanCells): its bytes at ctx over ctx, rounded up.
  const uint64_t held = LayerCells(SpanCells(), config, layer, ctx);
  return (per_position * held + ctx - 1) / ctx;
}

std::string AttentionSuffix(AttentionMode attention) {
  return attention == AttentionMode::kLlamaCpp ? ",engine=llama.cpp" : "";
}

}  // namespace kvaudit
