// Per-position fidelity when a side is known only through a server's top-k logprobs
// (docs/metrics.md "Fidelity through an endpoint"). A server such as vLLM (prompt_logprobs)
// or kvaudit serve returns, per prompt position, the true token's logprob and the k most likely
// tokens' logprobs; from those:
//   ΔNLL, Δp      exact (the true token's logprob is returned whatever its rank)
//   top-1         exact (the top entry is the argmax, ties to the lower id)
//   top-5 drop    exact when k >= 5 (the base argmax is in the configuration's top 5 or not)
//   KLD           a lower bound: the categories whose probability is known on both sides, plus one
//                 category lumping the rest, give KL(P' ‖ Q') <= KL(P ‖ Q) (log-sum inequality:
//                 merging outcomes never raises a KL divergence). Equal to the full KL when both
//                 sides' known tokens cover the whole vocabulary.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "eval/fidelity_metrics.h"
#include "run/topk_row.h"

namespace kvaudit {

// The fewest top logprobs per position eval asks a server for (top-5 drop needs 5).
inline constexpr int kMinTopK = 5;

// The baseline known in full (an in-process cache: base.Set was called with its logits) against a
// configuration known by its top k. cfg.top must not be empty; cfg.token is base's true token.
PositionFidelity CompareTopK(const BaseRow& base, const TopKRow& cfg);

// Both sides known by their top k (a remote baseline). base.top and cfg.top must not be empty.
PositionFidelity CompareTopK(const TopKRow& base, const TopKRow& cfg);

// The baseline known by its top k (a remote baseline), the configuration in full (in-process
// logits, [vocab]): the known categories are the baseline's.
PositionFidelity CompareTopK(const TopKRow& base, std::span<const float> cfg_logits);

// KL(P' ‖ Q') over the known categories plus the lumped rest (both given as (logp_base, logp_cfg)
// pairs of distinct tokens): the lower bound above. Exposed for its tests.
double LumpedKl(const std::vector<std::pair<double, double>>& known);

}  // namespace kvaudit
