#include "decide/sensitivity/job_target.h"

#include <algorithm>

#include "decide/sensitivity/sensitivity_specs.h"
#include "kv/formats/format_table.h"

namespace kvaudit {

ScaleSources ScaleSourcesOf(bool have_calib, const CheckpointKvScales& ckpt) {
  return ScaleSources{.calib = have_calib, .ckpt = !ckpt.empty(), .ckpt_per_head = ckpt.per_layer > 1};
}

std::vector<std::string> DefaultCandidateFormats(const std::string& target_flag, ScaleSources scales) {
  const std::vector<std::string> llamacpp = {"q8_0,q4_0"};
  const Expected<const Target*> target =
      target_flag.empty() ? Expected<const Target*>(&LlamaCppTarget()) : TargetNamed(target_flag);
  if (!target.ok() || (*target)->formats.empty()) return llamacpp;
  const std::vector<KvFormat>& formats = (*target)->formats;
  if (std::find(formats.begin(), formats.end(), KvFormat::kQ8_0) != formats.end()) return llamacpp;
  std::string own;
  // TurboQuant's formats are candidates too: the search pairs them as vLLM's presets
  // (decide/search/mix_search.h, skip-layers).
  for (KvFormat f : formats) {
    if (IsFullPrecision(f)) continue;
    const std::string name(KvFormatName(f));
    own += (own.empty() ? "" : ",") + name;
    if (!HasTensorScale(f) || f == KvFormat::kFp8E5M2) continue;
    if (scales.calib) own += "," + name + ",scale=calib";
    // Per-head checkpoint scales: nvfp4's kernels read one global scale per layer.
    if (scales.ckpt && !scales.ckpt_per_head) own += "," + name + ",scale=ckpt";
    if (scales.ckpt && scales.ckpt_per_head && IsFp8(f)) own += "," + name + ",scale=ckpt,scale_by=head";
  }
  return own.empty() ? llamacpp : std::vector<std::string>{own};
}

Expected<std::vector<CacheConfig>> CandidateConfigs(const std::vector<std::string>& formats,
                                                    const std::string& target_flag, ScaleSources scales) {
  const std::vector<std::string> args = formats.empty() ? DefaultCandidateFormats(target_flag, scales) : formats;
  KV_ASSIGN_OR_RETURN(const std::vector<FormatCandidate> candidates, ParseCandidates(args));
  std::vector<CacheConfig> out;
  for (const FormatCandidate& c : candidates) {
    KvSettings s = c.protections;
    s.k = c.format, s.v = c.format;
    out.push_back(CacheConfig::Uniform(s));
  }
  return out;
}

Expected<const Target*> ApplyJobTarget(const std::string& flag, const std::vector<CacheConfig>& candidates,
                                       KvConfigOptions* kv) {
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> given, ParseKvArguments(*kv));  // [baseline, --kv...]
  const std::vector<CacheConfig> configs(given.begin() + 1, given.end());
  const Target* target = nullptr;
  if (flag.empty()) {
    std::vector<CacheConfig> all = configs;
    all.insert(all.end(), candidates.begin(), candidates.end());
    target = &DefaultTarget(all);
  } else {
    KV_ASSIGN_OR_RETURN(target, TargetNamed(flag));
  }
  for (const CacheConfig& c : candidates) KV_RETURN_IF_ERROR(UnderTarget(*target, c, "--formats"));
  for (size_t i = 0; i < configs.size(); ++i) {
    KV_ASSIGN_OR_RETURN(const CacheConfig c, UnderTarget(*target, configs[i], "--kv"));
    kv->kv[i] = c.spec();
  }
  kv->baseline = WithTargetEngine(*target, given.front()).spec();
  return target;
}

}  // namespace kvaudit
