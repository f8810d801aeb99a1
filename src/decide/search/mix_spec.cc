#include "decide/search/mix_spec.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "kv/make_cache.h"

namespace kvaudit {
namespace {

// Modifier keys a candidate may carry (docs/formats.md, the --kv table; k, v and kv name the
// tensor's format, engine is read apart).
constexpr std::string_view kModifierKeys[] = {"scale", "scale_by", "group",    "recent",
                                              "sink",  "rot",      "outliers", "prerope"};

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

Error CandidateError(std::string_view text, const std::string& what, const std::string& hint) {
  return BadInput("candidate \"" + std::string(text) + "\": " + what + "; hint: " + hint);
}

std::string Join(const std::map<std::string, std::string>& settings) {
  std::string out;
  for (const auto& [key, value] : settings) out += (out.empty() ? "" : ",") + key + "=" + value;
  return out;
}

// The policy of one (layer, head) given as a settings map (k, v, modifiers). The map was built
// from parsed candidates, so it parses.
HeadConfig PolicyOf(const std::map<std::string, std::string>& settings) {
  auto policy = CacheConfig::Parse(Join(settings));
  KV_CHECK_MSG(policy.ok(), policy.ok() ? "" : policy.error().message.c_str());
  return policy->ForHead(0, 0);
}

std::map<std::string, std::string> AloneSettings(const Candidate& c, char tensor) {
  std::map<std::string, std::string> s = c.settings;
  s["k"] = s["v"] = "f16";
  s[std::string(1, tensor)] = std::string(KvFormatName(c.format));
  return s;
}

// Reads the items after the format into c; the error (with its hint) of the first bad one.
std::optional<Error> ReadModifiers(std::string_view text, const std::vector<std::string>& items, char tensor,
                                   Candidate& c) {
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
    if (!c.settings.emplace(key, value).second) {
      return CandidateError(text, "key '" + key + "' given twice", "give each key once");
    }
  }
  return std::nullopt;
}

}  // namespace

Expected<Candidate> ParseCandidate(std::string_view text, char tensor) {
  KV_CHECK(tensor == 'k' || tensor == 'v');
  const std::string trimmed = Trim(text);
  if (trimmed.empty()) return CandidateError(text, "empty", "e.g. q8_0 or q4_0,rot=1");
  std::vector<std::string> items;
  for (size_t start = 0;;) {
    const size_t comma = trimmed.find(',', start);
    items.push_back(Trim(std::string_view(trimmed).substr(start, comma == std::string::npos ? comma : comma - start)));
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
  if (auto error = ReadModifiers(text, items, tensor, c)) return *error;
  // The values are checked by the --kv grammar itself (its message, which has its own hint, is
  // given for the candidate); its canonical spec orders the keys.
  const std::string spec = "k=" + items[0] + (c.settings.empty() ? "" : "," + Join(c.settings));
  auto policy = CacheConfig::Parse(spec);
  if (!policy.ok()) {
    const std::string& m = policy.error().message;
    const std::string prefix = "--kv \"" + spec + "\": ";
    return BadInput("candidate \"" + std::string(text) +
                    "\": " + (m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m));
  }
  c.text = policy->spec().substr(2);  // "k=q4_0,rot=1" -> "q4_0,rot=1"
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
  if (IsFp8(s.format)) s.scale = p.scale, s.scale_by = p.scale_by;
  if (IsIntGroup(s.format)) s.group = p.IntGroup();
  if (IsKivi(s.format)) s.group = p.KiviGroup();
  if (tensor == 'k') s.outliers = p.outliers, s.pre_rope = p.pre_rope;
  return s;
}

TensorStorage StorageOf(const Candidate& c, char tensor, AttentionMode attention) {
  return StorageOf(PolicyOf(AloneSettings(c, tensor)), tensor, attention);
}

std::optional<std::map<std::string, std::string>> ShareLayer(const Candidate& k, const Candidate& v,
                                                             AttentionMode attention) {
  const TensorStorage want_k = StorageOf(k, 'k', attention), want_v = StorageOf(v, 'v', attention);
  std::map<std::string, std::string> merged = k.settings;
  std::vector<std::pair<std::string, std::string>> conflicts;  // [n] key, V's value where K gives another
  for (const auto& [key, value] : v.settings) {
    auto [it, added] = merged.emplace(key, value);
    if (!added && it->second != value) conflicts.push_back({key, value});
  }
  merged["k"] = std::string(KvFormatName(k.format));
  merged["v"] = std::string(KvFormatName(v.format));
  // A key both give differently can still be shared when it acts on one tensor only (group of an
  // int4 K beside a q4_0 V): try every choice of whose value each such key takes, K's first.
  KV_CHECK(conflicts.size() < 16);
  for (uint32_t mask = 0; mask < (1u << conflicts.size()); ++mask) {
    std::map<std::string, std::string> trial = merged;
    for (size_t i = 0; i < conflicts.size(); ++i) {
      if (mask >> i & 1) trial[conflicts[i].first] = conflicts[i].second;
    }
    const HeadConfig p = PolicyOf(trial);
    if (StorageOf(p, 'k', attention) == want_k && StorageOf(p, 'v', attention) == want_v) return trial;
  }
  return std::nullopt;
}

namespace {

// The keys a layer needs beyond the default segment `base` so that it stores K and V as `want`
// does, or nullopt when no override can (a key of the default that the layer lacks acts on it and
// has no explicit neutral value, e.g. group= beside int4 and KIVI tensors of default groups).
std::optional<std::map<std::string, std::string>> OverrideFor(const std::map<std::string, std::string>& base,
                                                              const std::map<std::string, std::string>& want,
                                                              AttentionMode attention) {
  const HeadConfig target = PolicyOf(want);
  const TensorStorage want_k = StorageOf(target, 'k', attention), want_v = StorageOf(target, 'v', attention);
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : want) {
    auto it = base.find(key);
    if (it == base.end() || it->second != value) out[key] = value;
  }
  auto stores_alike = [&](const std::map<std::string, std::string>& over) {
    std::map<std::string, std::string> layer = base;
    for (const auto& [key, value] : over) layer[key] = value;
    const HeadConfig p = PolicyOf(layer);
    return StorageOf(p, 'k', attention) == want_k && StorageOf(p, 'v', attention) == want_v;
  };
  if (stores_alike(out)) return out;
  // Keys of the default the layer leaves unset, written back to what unset means for this layer.
  const std::map<std::string, std::string> neutral = {{"scale", "unit"},
                                                      {"scale_by", "layer"},
                                                      {"sink", "0"},
                                                      {"rot", "auto"},
                                                      {"outliers", "0"},
                                                      {"prerope", "0"},
                                                      {"recent", std::to_string(target.Recent())}};
  for (const auto& [key, value] : base) {
    if (want.count(key) || out.count(key) || !neutral.count(key)) continue;
    out[key] = neutral.at(key);
  }
  if (stores_alike(out)) return out;
  return std::nullopt;
}

std::string Range(int first, int last) {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

// The spec with `base` as the default segment, or "" when some layer cannot be reached from it.
std::string RenderWithBase(const std::map<std::string, std::string>& base,
                           const std::vector<std::map<std::string, std::string>>& layers, AttentionMode attention) {
  std::vector<std::map<std::string, std::string>> over;  // [n_layers] keys beyond the default
  for (const auto& want : layers) {
    auto o = OverrideFor(base, want, attention);
    if (!o) return "";
    over.push_back(std::move(*o));
  }
  std::string spec = Join(base) + AttentionSuffix(attention);
  const int n = static_cast<int>(layers.size());
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && over[j + 1] == over[i]) ++j;
    if (!over[i].empty()) spec += ";layers=" + Range(i, j) + ":" + Join(over[i]);
    i = j + 1;
  }
  auto canonical = CacheConfig::Parse(spec);
  KV_CHECK(canonical.ok());
  return canonical->spec();
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

std::string RenderMixSpec(const std::vector<LayerCandidates>& layers, AttentionMode attention) {
  KV_CHECK(!layers.empty());
  std::vector<std::map<std::string, std::string>> wanted;  // [n_layers] the settings of each layer
  for (const LayerCandidates& l : layers) {
    auto s = ShareLayer(*l.k, *l.v, attention);
    KV_CHECK_MSG(s.has_value(), ("K " + l.k->text + " and V " + l.v->text + " cannot share a layer").c_str());
    wanted.push_back(std::move(*s));
  }
  std::vector<std::map<std::string, std::string>> bases;  // the default segments tried, in order
  const Candidate* k = MostCommon(layers, [](const LayerCandidates& l) { return l.k; });
  const Candidate* v = MostCommon(layers, [](const LayerCandidates& l) { return l.v; });
  if (auto s = ShareLayer(*k, *v, attention)) bases.push_back(std::move(*s));
  for (const auto& w : wanted) {
    if (std::find(bases.begin(), bases.end(), w) == bases.end()) bases.push_back(w);
  }
  std::string best;
  for (const auto& base : bases) {
    std::string spec = RenderWithBase(base, wanted, attention);
    if (!spec.empty() && (best.empty() || spec.size() < best.size())) best = std::move(spec);
  }
  // Some default always reaches every layer: only group= has no neutral value, and a layer that
  // lacks it is itself a default without it (when every layer sets group=, any default works).
  KV_CHECK(!best.empty());
  // Every choice came through ParseCandidate and every rendering through RenderWithBase: a spec
  // that does not parse back is a bug in them, reported with the parser's own message.
  const Expected<CacheConfig> parsed = CacheConfig::Parse(best);
  KV_CHECK_MSG(parsed.ok(), ("rendered spec " + best + " does not parse: " + parsed.error().message).c_str());
  const CacheConfig& policy = parsed.value();
  for (size_t i = 0; i < layers.size(); ++i) {
    const HeadConfig p = policy.ForHead(static_cast<int>(i), 0);
    KV_CHECK_MSG(StorageOf(p, 'k', attention) == StorageOf(*layers[i].k, 'k', attention) &&
                     StorageOf(p, 'v', attention) == StorageOf(*layers[i].v, 'v', attention),
                 ("rendered spec " + best + " does not store layer " + std::to_string(i) + " as chosen").c_str());
  }
  return best;
}

Expected<uint64_t> PartBytesPerToken(const ModelConfig& config, const Candidate& c, int layer, char tensor, int ctx,
                                     const KvCalibration* calib) {
  KV_CHECK(layer >= 0 && layer < config.n_layers && (tensor == 'k' || tensor == 'v') && ctx > 0);
  const std::string attention = c.attention ? AttentionSuffix(*c.attention) : "";
  std::string part = std::string(1, tensor) + "=" + std::string(KvFormatName(c.format));
  if (!c.settings.empty()) part += "," + Join(c.settings);
  auto policy = CacheConfig::Parse("k=f16,v=f16" + attention + ";layers=" + std::to_string(layer) + ":" + part);
  KV_CHECK(policy.ok());
  KV_ASSIGN_OR_RETURN(auto cache, MakeCache(config, *policy, calib, ctx));
  // An f16 tensor holds exactly 2 bytes per element and token (docs/formats.md), so the rest is a
  // whole number of bytes per token and the ceiling of bytes_per_token falls on this part alone.
  const uint64_t f16_tensor = 2ull * config.n_kv_heads * config.head_dim;
  const uint64_t rest = (2ull * config.n_layers - 1) * f16_tensor;
  KV_CHECK(cache->bytes_per_token() >= rest);
  return cache->bytes_per_token() - rest;
}

std::string AttentionSuffix(AttentionMode attention) { return attention == AttentionMode::kLlamaCpp ? ",engine=llama.cpp" : ""; }

}  // namespace kvaudit
