#include "decide/sensitivity/sensitivity_specs.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <string_view>

#include "kv/formats/format_table.h"
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

std::string Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') out.push_back(Trim(std::string_view(s).substr(start, i - start))), start = i + 1;
  }
  return out;
}

Error FormatsError(const std::string& what, std::string_view hint) {
  return BadInput("--formats: " + what + "; hint: " + std::string(hint));
}

Status AddProtection(FormatCandidate& c, const std::string& item) {
  const size_t eq = item.find('=');
  const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
  if (std::find(kProtectionKeys.begin(), kProtectionKeys.end(), key) == kProtectionKeys.end()) {
    return FormatsError("'" + item + "' is not a protection of " + c.format, kCandidateHint);
  }
  if (value.empty()) return FormatsError("'" + item + "' has no value", kCandidateHint);
  if (!c.protections.emplace(key, value).second) {
    return FormatsError("'" + key + "' given twice for " + c.format, "give each protection once per candidate");
  }
  return Status::Ok();
}

// "k=f32,v=f32" -> {k: f32, v: f32}; the spec is canonical and has one segment.
std::map<std::string, std::string> Settings(const std::string& spec) {
  std::map<std::string, std::string> out;
  for (const std::string& kv : SplitComma(spec)) {
    const size_t eq = kv.find('=');
    KV_CHECK(eq != std::string::npos);
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

std::string Join(const std::map<std::string, std::string>& settings) {
  std::string out;
  for (const auto& [k, v] : settings) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

// The spec in canonical form, or BadInput naming the candidate.
Expected<std::string> Canonical(const std::string& spec, const FormatCandidate& c) {
  auto policy = CacheConfig::Parse(spec);
  if (!policy.ok()) return BadInput("--formats " + c.name() + ": " + policy.error().message);
  return policy->spec();
}

}  // namespace

std::string CachePart::name() const { return "L" + std::to_string(layer) + (tensor == KvTensor::kK ? ".K" : ".V"); }

std::vector<CachePart> AllParts(int n_layers) {
  std::vector<CachePart> parts;
  for (int l = 0; l < n_layers; ++l) parts.push_back({l, KvTensor::kK}), parts.push_back({l, KvTensor::kV});
  return parts;
}

std::string FormatCandidate::name() const {
  std::string out = format;
  for (std::string_view key : kProtectionKeys) {
    auto it = protections.find(std::string(key));
    if (it != protections.end()) out += "," + it->first + "=" + it->second;
  }
  return out;
}

Expected<std::vector<FormatCandidate>> ParseCandidates(const std::vector<std::string>& args) {
  std::vector<FormatCandidate> out;
  for (const std::string& arg : args) {
    bool first = true;
    for (const std::string& item : SplitComma(arg)) {
      if (item.empty()) return FormatsError("empty entry in '" + arg + "'", kCandidateHint);
      if (item.find('=') != std::string::npos) {
        if (first) return FormatsError("'" + item + "' comes before any format in '" + arg + "'", kCandidateHint);
        KV_RETURN_IF_ERROR(AddProtection(out.back(), item));
        continue;
      }
      if (!KvFormatFromName(item)) {
        std::string names;
        for (const FormatRow& r : FormatTable()) names += (names.empty() ? "" : ", ") + std::string(r.name);
        return FormatsError("unknown format '" + item + "'", "formats: " + names + " (kvaudit formats)");
      }
      out.push_back({item, {}});
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

Expected<CandidateSpecs> MakeCandidateSpecs(const std::string& baseline_spec, const FormatCandidate& c, int n_layers) {
  if (baseline_spec.find(';') != std::string::npos) {
    return BadInput("--baseline \"" + baseline_spec +
                    "\" has per-layer overrides; hint: sensitivity quantizes one layer at a time against a uniform "
                    "baseline, e.g. --baseline k=f32,v=f32 or k=f16,v=f16");
  }
  const std::map<std::string, std::string> base = Settings(baseline_spec);
  const std::string base_k = base.count("k") ? base.at("k") : "f32", base_v = base.count("v") ? base.at("v") : "f32";
  auto with = [&](bool k, bool v) {
    std::map<std::string, std::string> s = base;
    for (const auto& [key, value] : c.protections) s[key] = value;
    if (k) s["k"] = c.format;
    if (v) s["v"] = c.format;
    return Join(s);
  };
  std::string prot;
  for (const auto& [key, value] : c.protections) prot += "," + key + "=" + value;
  CandidateSpecs out;
  KV_ASSIGN_OR_RETURN(out.all_quantized, Canonical(with(true, true), c));
  KV_ASSIGN_OR_RETURN(out.k_only, Canonical(with(true, false), c));
  KV_ASSIGN_OR_RETURN(out.v_only, Canonical(with(false, true), c));
  if (out.all_quantized == baseline_spec) {
    return BadInput("--formats " + c.name() + " is the baseline " + baseline_spec +
                    "; hint: pass candidates that differ from --baseline");
  }
  for (const CachePart& p : AllParts(n_layers)) {
    const bool is_k = p.tensor == KvTensor::kK;
    const std::string sel = ";layers=" + std::to_string(p.layer) + ":" + (is_k ? "k=" : "v=");
    KV_ASSIGN_OR_RETURN(std::string one, Canonical(baseline_spec + sel + c.format + prot, c));
    KV_ASSIGN_OR_RETURN(std::string loo, Canonical(out.all_quantized + sel + (is_k ? base_k : base_v), c));
    out.one_at_a_time.push_back(std::move(one));
    out.leave_one_out.push_back(std::move(loo));
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
