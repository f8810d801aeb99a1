// The inside of `kvaudit recommend` (decide/recommend/recommend.h; docs/decision.md "Recommend"): the search
// problem built from a sensitivity run, the front points chosen for verification, and one
// verification round (eval on the held-out windows, the probes, the policy).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decide/recommend/recommend.h"

namespace kvaudit {

using ShapedFronts = std::vector<std::pair<MixShape, MixFront>>;

// Every part's choices: the baseline's format (cost 0), then each candidate that can store it,
// with its cost and bytes at the target context.
MixProblem BuildMixProblem(const RecommendPlan& plan, const std::vector<std::vector<PartCost>>& costs);

// The fronts of the shapes the problem allows: per-layer and uniform always, first/last when every
// candidate K can share a layer with every candidate V (ik_llama.cpp has no per-layer modifiers),
// global/sliding for a model with both kinds. With a deployment engine (recommend --target
// naming one): also skip-layers where the engine has skipped layers (vLLM), and each front only
// the points the engine runs exactly (RunsExactly), empty fronts dropped; the shapes that enumerate
// their points (all but per-layer) drop the others before keeping the undominated ones.
ShapedFronts SearchFronts(const MixProblem& problem, std::optional<DeployTarget> engine = std::nullopt,
                          const ModelConfig* model = nullptr);

// The points a round verifies, deduplicated by canonical spec (a point on several fronts lists
// each shape), by bytes descending. Round 1 lies under the budget: on the per-layer front the best
// point that fits, the fewest-bytes point whose predicted KLD is at most `kld_mean_max` (the
// policy's limit on a bucket's mean; the prediction is the overall mean on the calibration
// windows, 0.98-1.47x the held-out mean on the bundled model: docs/decision.md "Recommend"), and points
// evenly between, `per_layer_points` in all; the best first/last point; the best two uniform
// points. Round 2 lies above it: from the first point above the budget up to the first predicted
// to pass. The baseline itself is never verified (it is the
// reference). kld_mean_max: the policy's, nullopt when it sets none (then the cheapest end is the
// front's first point).
std::vector<VerifiedPoint> ChoosePoints(const MixProblem& problem, const ShapedFronts& fronts, uint64_t budget,
                                        std::optional<double> kld_mean_max, int per_layer_points, int round,
                                        const CacheConfig& baseline);

// Round 3: every approximation (decide/targets/target_settings.h, closest first) that an engine which
// cannot store one of `specs` exactly runs instead, and a choice that reads calibrated or checkpoint
// scales as it runs when they do not load (scales_dropped: CacheConfig::WithoutScales), not
// verified yet and not the baseline, as points with no shape; their bytes come from the
// verification's eval.
std::vector<VerifiedPoint> TargetApproximations(const std::vector<CacheConfig>& chosen,
                                                const std::vector<VerifiedPoint>& verified, const ModelConfig& config,
                                                int target_ctx, const CacheConfig& baseline);

// A shard round of the verification (recommend --shard with the sensitivity merged;
// docs/scale-out.md "Staged jobs"): a verification round merged in `merged` is resumed there
// wholly and judged; the first one that is not is computed as this shard's part (its eval and
// probe stages under the shard's DIR), and the search stops there (`stopped`, `stages`).
struct VerifyShard {
  ShardSpec shard;
  std::string merged;                                       // the recommend directory the rounds were merged into
  std::function<Status(const ShardRound&)> before_compute;  // called with the stages before computing them
  bool stopped = false;
  std::vector<std::string> stages;   // relative to the recommend DIR: verify-.../eval, .../probe
  int windows = 0, probe_units = 0;  // what the shard computed of them
};

// Runs the round in DIR/verify-<round>-<hash of its specs> (so another budget gets new runs and
// keeps the sensitivity run): eval on the held-out windows, the policy's probe families, then the
// gate's verdict for every point. The model is lent from plan.sensitivity and handed back. With
// `shard`: as VerifyShard says (no verdicts when it stops).
Status VerifyRound(RecommendPlan& plan, std::vector<VerifiedPoint>* points, std::string* dir,
                   VerifyShard* shard = nullptr);

}  // namespace kvaudit
