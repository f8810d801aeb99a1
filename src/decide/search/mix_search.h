// The mix search of `kvaudit recommend`: given, for every (layer, K or V) of a model, the ways to
// store it with their measured fidelity cost and their bytes per token, the exact Pareto front of
// (bytes per token, cost) over all assignments of one choice per part that an engine can express.
// Pure and deterministic; nothing here runs the model. docs/decision.md, "Search".
//
// The model: the cost of an assignment is the sum of its parts' costs (additivity: each part's
// cost is measured with only that part quantized, so interactions between parts are not seen),
// and its bytes the sum of its parts' bytes. The front is exact for that model; `recommend`
// verifies its points end to end, which is where additivity is checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decide/search/mix_problem.h"

namespace kvaudit {

// Ascending bytes, strictly decreasing cost: every point is the cheapest in cost at its bytes and
// beats every point with fewer bytes. Ties of equal bytes and cost go to the assignment whose
// choice indices, read layer 0 K, layer 0 V, layer 1 K, ..., are lexicographically smallest.
using MixFront = std::vector<MixPoint>;

// What an engine can express (src/decide/engine_*.cc, docs/deployment.md).
enum class MixShape {
  kUniform,     // one K choice for every layer, one V choice for every layer (llama.cpp, vLLM, ...)
  kFirstLast,   // per tensor: one choice for the first N layers, one for the last M, one between
                // (ik_llama.cpp -ctk-first/-ctk-last/-ctv-first/-ctv-last)
  kPerLayer,    // any choice per (layer, tensor) that the --kv grammar can write (kvaudit)
  kByKind,      // one (K, V) choice for the sliding-window layers, one for the global ones (kvaudit's
                // layers=sliding / layers=global; no engine we target sets its cache type per kind)
  kSkipLayers,  // one quantized choice for K and V of every quantized layer (or a TurboQuant
                // preset's pair, its end layers unquantized), the others in full precision (vLLM's
                // --kv-cache-dtype with --kv-cache-dtype-skip-layers)
};
// "uniform", "first/last", "per-layer", "global/sliding", "skip-layers"
std::string_view MixShapeName(MixShape shape);

// The exact front of one shape. Time and memory (docs/decision.md): per-layer, a dynamic program
// over layers and bytes in units of g, the GCD of the byte differences within layers:
// O(Σ_layers P_l · W) time and W · n_layers bytes of back-pointers, P_l the (K, V) pairs of layer l
// left after removing pairs another pair of that layer dominates, W = Σ_l (max_l − min_l)/g + 1
// (at most 2 GiB of back-pointers: KV_CHECK).
// uniform: O(pairs · n_layers). first/last: O(T³ · L²) per tensor for T choices common to all
// layers, then the product of the two tensors' fronts. uniform and first/last consider only the
// candidates every layer offers (compared by canonical text); a front is empty when there is none.
// first/last needs every common K choice to share a layer with every common V choice (KV_CHECK:
// ik_llama.cpp has no per-layer modifiers to mix). global/sliding: the product of each kind's
// (K, V) pairs of candidates common to its layers, O(pairs² · n_layers); empty unless the model
// has both kinds. skip-layers: for each quantized candidate every layer offers for both K and V
// (and each TurboQuant preset pair of unmodified candidates), the per-layer front over two options
// per layer, that pair or the full-precision pair every layer offers (the first such; alone on a
// preset's end layers), merged into one front; O(types · n_layers · W).
MixFront SearchFront(const MixProblem& problem, MixShape shape);

// A budget against a front (non-empty).
struct BudgetFit {
  std::optional<size_t> best;  // the lowest-cost point within the budget (the one with the most
                               // bytes that fit); none when even the cheapest point needs more
  size_t n_within = 0;         // front[0, n_within) fit, fewest bytes first
  size_t cheapest = 0;         // the point with the fewest bytes overall (front[0])
};
BudgetFit CheapestUnder(const MixFront& front, uint64_t budget_bytes_per_token);

}  // namespace kvaudit
