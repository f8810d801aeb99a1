// The input of the search (decide/search/mix_search.h): for every (layer, K or V) of a model, the ways to
// store it with their measured cost and bytes, checked once and held in the form the search sums.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decide/search/mix_spec.h"

namespace kvaudit {

struct PartChoice {       // one way to store one part
  std::string candidate;  // the tensor's storage: "f16", "q8_0", "q4_0,rot=1" (ParseCandidate)
  double cost = 0;        // measured fidelity cost of this part alone so stored (e.g. mean KLD); 0 for the baseline
  uint64_t bytes_per_token = 0;  // what this part holds per token at the target context (PartBytesPerToken)
};

struct Part {
  int layer = 0;
  char tensor = 'k';                // 'k' | 'v'
  std::vector<PartChoice> choices;  // at most kMaxChoices
  bool sliding = false;             // the layer attends over a sliding window (ModelConfig::is_sliding)
};

// One point of a front. choice: [2 · n_layers], part 2·layer + (tensor == 'v'), each an index into
// that part's choices. cost is the exact sum of the parts' costs as the search rounds them (to a
// multiple of 2^-52 of the largest possible total, so sums do not depend on their order).
struct MixPoint {
  uint64_t bytes_per_token = 0;
  double cost = 0;
  std::vector<uint8_t> choice;
};
class MixProblem {
 public:
  static constexpr int kMaxChoices = 16;  // a layer's (K, V) pairs are indexed by one byte

  // Invariants (KV_CHECK, one message each): the parts cover layers 0..n-1 with one K and one V
  // part each; every part has 1..kMaxChoices choices with distinct, parseable candidates, finite
  // costs and bytes below 2^40; no two candidates name different engines (engine= is whole-cache);
  // every layer has a K and a V choice that can share it (ShareLayer); a layer's K and V parts agree
  // on whether it slides; under engine=llama.cpp only
  // llama.cpp's cache types without kvaudit-only protections. Parts may come in any order.
  static MixProblem FromPartsOrDie(std::vector<Part> parts);

  int n_layers() const { return static_cast<int>(parts_.size() / 2); }
  const Part& part(int layer, char tensor) const { return parts_[Index(layer, tensor)]; }
  const Candidate& candidate(int layer, char tensor, int choice) const { return cands_[Index(layer, tensor)][choice]; }
  AttentionMode attention() const { return attention_; }
  bool sliding(int layer) const { return parts_[Index(layer, 'k')].sliding; }
  // Some layers slide and some attend globally (the global/sliding shape applies).
  bool HasBothLayerKinds() const;
  // The K and V choices can share the layer (the grammar writes both as measured).
  bool Compatible(int layer, int k_choice, int v_choice) const;
  // A part's cost as the search sums it: an integer count of quantum().
  int64_t FixedCost(int layer, char tensor, int choice) const { return fixed_[Index(layer, tensor)][choice]; }
  double quantum() const { return quantum_; }
  // The compact kvaudit spec of a point's assignment (RenderMixSpec).
  CacheConfig Config(const MixPoint& point) const;
  std::string Spec(const MixPoint& point) const { return Config(point).spec(); }
  // Sums an assignment as the search does: bytes, and the exact cost.
  MixPoint Evaluate(std::vector<uint8_t> choice) const;
  // The configurations the search may return: with a restriction (an engine's RunsExactly), the
  // shapes that enumerate their points drop the others before keeping the undominated ones, so a
  // point no engine runs never hides one it does.
  void RestrictTo(std::function<bool(const CacheConfig&)> runs) { runs_ = std::move(runs); }
  bool Runs(const std::vector<uint8_t>& choice) const;  // true without a restriction

  static int Index(int layer, char tensor) { return 2 * layer + (tensor == 'v' ? 1 : 0); }

 private:
  void CheckLlamaCppChoices() const;
  void BuildCompat();

  std::vector<Part> parts_;                    // [2 · n_layers] in Index order
  std::vector<std::vector<Candidate>> cands_;  // [2 · n_layers][n_choices]
  std::vector<std::vector<int64_t>> fixed_;    // [2 · n_layers][n_choices] costs in units of quantum_
  std::vector<std::vector<uint8_t>> compat_;   // [n_layers][n_k_choices · n_v_choices] ShareLayer
  double quantum_ = 1;
  AttentionMode attention_ = AttentionMode::kNative;
  std::function<bool(const CacheConfig&)> runs_;  // empty: every configuration
};

}  // namespace kvaudit
