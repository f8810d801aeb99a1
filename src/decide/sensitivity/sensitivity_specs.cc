#include "decide/sensitivity/sensitivity_specs.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <string_view>

#include "kv/formats/format_table.h"
#include "base/trim.h"
#include "kv/config/cache_config.h"

namespace kvaudit {
namespace {

// The protections a candidate may carry, in the grammar's canonical key order (docs/formats.md).
// k, v and kv are what the sensitivity run sets per part; engine is global, so it would change
// the attention of every layer, not one part.
constexpr std::array<std::string_view, 8> kProtectionKeys = {"scale", "scale_by", "group",    "recent",
                                                             "sink",  "rot",      "outliers", "prerope"};
constexpr std::string_view kCandidateHint =
    "a candidate is FORMAT[,key=value...] with keys scale, scale_by, group, recent, sink, rot, outliers, prerope, "
    "e.g. --formats q8_0,q4_0,rot=1";

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',')
      out.push_back(std::string(TrimSpace(std::string_view(s).substr(start, i - start)))), start = i + 1;
  }
  return out;
}

Error FormatsError(const std::string& what, std::string_view hint) {
  return BadInput("--formats: " + what + "; hint: " + std::string(hint));
}

// One `key=value` of --formats into c; keys: the ones given so far for c.
Status AddProtection(FormatCandidate& c, std::set<std::string>& keys, const std::string& item) {
  const size_t eq = item.find('=');
  const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
  if (std::find(kProtectionKeys.begin(), kProtectionKeys.end(), key) == kProtectionKeys.end()) {
    return FormatsError("'" + item + "' is not a protection of " + std::string(KvFormatName(c.format)), kCandidateHint);
  }
  if (value.empty()) return FormatsError("'" + item + "' has no value", kCandidateHint);
  if (!keys.insert(key).second) {
    return FormatsError("'" + key + "' given twice for " + std::string(KvFormatName(c.format)),
                        "give each protection once per candidate");
  }
  KV_ASSIGN_OR_RETURN(const KvSettings one, KvSettings::Parse(item, "--formats"));
  c.protections.Overlay(one);
  return Status::Ok();
}

}  // namespace

std::string CachePart::name() const { return "L" + std::to_string(layer) + (tensor == KvTensor::kK ? ".K" : ".V"); }

std::vector<CachePart> AllParts(int n_layers) {
  std::vector<CachePart> parts;
  for (int l = 0; l < n_layers; ++l) parts.push_back({l, KvTensor::kK}), parts.push_back({l, KvTensor::kV});
  return parts;
}

std::string FormatCandidate::name() const {
  const std::string p = protections.Print();
  return std::string(KvFormatName(format)) + (p.empty() ? "" : "," + p);
}

Expected<std::vector<FormatCandidate>> ParseCandidates(const std::vector<std::string>& args) {
  std::vector<FormatCandidate> out;
  std::vector<std::set<std::string>> keys;  // [candidates] the protection keys given for each
  for (const std::string& arg : args) {
    bool first = true;
    for (const std::string& item : SplitComma(arg)) {
      if (item.empty()) return FormatsError("empty entry in '" + arg + "'", kCandidateHint);
      if (item.find('=') != std::string::npos) {
        if (first) return FormatsError("'" + item + "' comes before any format in '" + arg + "'", kCandidateHint);
        KV_RETURN_IF_ERROR(AddProtection(out.back(), keys.back(), item));
        continue;
      }
      const std::optional<KvFormat> format = KvFormatFromName(item);
      if (!format) {
        std::string names;
        for (const FormatRow& r : FormatTable()) names += (names.empty() ? "" : ", ") + std::string(r.name);
        return FormatsError("unknown format '" + item + "'", "formats: " + names + " (kvaudit formats)");
      }
      out.push_back({*format, {}}), keys.emplace_back();
      first = false;
    }
  }
  if (out.empty()) return FormatsError("no candidate format", kCandidateHint);
  std::set<std::string> seen;
  for (const FormatCandidate& c : out) {
    if (!seen.insert(c.name()).second)
      return FormatsError("candidate " + c.name() + " given twice", "give each candidate once");
  }
  return out;
}

Expected<CandidateSpecs> MakeCandidateSpecs(const CacheConfig& baseline, const FormatCandidate& c, int n_layers) {
  if (baseline.HasOverrides()) {
    return BadInput("--baseline \"" + baseline.spec() +
                    "\" has per-layer overrides; hint: sensitivity quantizes one layer at a time against a uniform "
                    "baseline, e.g. --baseline k=f32,v=f32 or k=f16,v=f16");
  }
  const KvSettings& base = baseline.defaults();
  const KvFormat base_k = base.k.value_or(KvFormat::kF32), base_v = base.v.value_or(KvFormat::kF32);
  // The baseline's keys, the protections over them, then the candidate's format on K and/or V.
  auto quantized = [&](bool k, bool v) {
    KvSettings s = base;
    s.Overlay(c.protections);
    if (k) s.k = c.format;
    if (v) s.v = c.format;
    return s;
  };
  auto uniform = [&](bool k, bool v) { return CacheConfig::Uniform(quantized(k, v), baseline.attention_written()); };
  CandidateSpecs out{uniform(true, true), uniform(true, false), uniform(false, true), {}, {}};
  if (out.all_quantized == baseline) {
    return BadInput("--formats " + c.name() + " is the baseline " + baseline.spec() +
                    "; hint: pass candidates that differ from --baseline");
  }
  for (const CachePart& p : AllParts(n_layers)) {
    const bool is_k = p.tensor == KvTensor::kK;
    KvSettings one = c.protections, restore;
    (is_k ? one.k : one.v) = c.format;
    (is_k ? restore.k : restore.v) = is_k ? base_k : base_v;
    out.one_at_a_time.push_back(baseline.WithLayers({p.layer, p.layer}, one));
    out.leave_one_out.push_back(out.all_quantized.WithLayers({p.layer, p.layer}, restore));
  }
  return out;
}

int AutoTopK(int n_parts) { return std::min(n_parts, std::max(4, (n_parts + 3) / 4)); }

std::vector<int> TopParts(const std::vector<double>& scores, int k) {
  std::vector<int> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  idx.resize(std::min(idx.size(), static_cast<size_t>(std::max(k, 0))));
  return idx;
}

}  // namespace kvaudit
