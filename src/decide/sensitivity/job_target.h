// --target for the jobs that build their configurations from --formats candidates over a baseline
// (sensitivity, recommend, and audit's recommendation): which target they measure under, and the
// baseline written as that target runs it, so that every configuration they make (the baseline's
// settings with some parts quantized) carries the target's engine (decide/targets/measure_target.h).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "decide/targets/measure_target.h"
#include "kv/config/cache_config.h"
#include "model/config.h"
#include "run/kv_configs.h"

namespace kvaudit {

// Where the scales of a format with a per-tensor scale (fp8, nvfp4) may come from, beside none.
struct ScaleSources {
  bool calib = false;          // --kv-calib was given: scale=calib
  bool ckpt = false;           // the checkpoint carries k_scale/v_scale tensors: scale=ckpt
  bool ckpt_per_head = false;  // ... one per KV head (scale=ckpt,scale_by=head; fp8 only)
};
ScaleSources ScaleSourcesOf(bool have_calib, const CheckpointKvScales& ckpt);

// The candidates when --formats is not given: llama.cpp's q8_0 and q4_0, unless --target names an
// engine without them — then its own quantized cache formats (vllm: fp8_e4m3, fp8_e5m2, nvfp4,
// nvfp4_4over6, int8/fp8_per_token_head, TurboQuant's). A format with a per-tensor scale is the
// engine without checkpoint scales (scale=unit: what runs when a loader drops them) and, for each
// source in `scales`, also with those (scale=calib, scale=ckpt; not fp8_e5m2, which no engine
// scales): separate configurations, each judged. An unknown target name is checked elsewhere
// (TargetNamed); here it gets the llama.cpp default.
std::vector<std::string> DefaultCandidateFormats(const std::string& target_flag, ScaleSources scales = {});

// --formats values (DefaultCandidateFormats when empty) as uniform configurations (one per
// candidate, K and V in its format), for DefaultTarget.
Expected<std::vector<CacheConfig>> CandidateConfigs(const std::vector<std::string>& formats,
                                                    const std::string& target_flag, ScaleSources scales = {});

// `flag` ("" = DefaultTarget over kv's --kv configurations and `candidates`) resolved; every
// candidate's formats checked against the target's (BadInput naming --formats); kv's baseline and
// configurations rewritten as canonical specs under the target (UnderTarget: a --kv format the
// target lacks is BadInput naming --kv). The baseline's formats are not checked: it is the
// reference, not a deployment.
Expected<const Target*> ApplyJobTarget(const std::string& flag, const std::vector<CacheConfig>& candidates,
                                       KvConfigOptions* kv);

}  // namespace kvaudit
