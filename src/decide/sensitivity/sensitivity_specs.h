// The cache configurations of a sensitivity run (docs/decision.md "Sensitivity"): for a candidate
// format (with optional protections) and a baseline, one spec per (layer, K or V) with only that
// part quantized ("one at a time"), one with everything but that part quantized ("leave one out"),
// and the uniform ones the reference and the proxy need (all quantized, K only, V only). Every spec
// is written in the --kv grammar (docs/formats.md), so the configurations are ordinary eval
// configurations and results name them by their canonical spec.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "kv/config/cache_config.h"

namespace kvaudit {

enum class KvTensor { kK, kV };

// One part of the cache: a layer's K or its V (all KV heads of the layer together).
struct CachePart {
  int layer = 0;
  KvTensor tensor = KvTensor::kK;
  std::string name() const;  // "L3.K"
  bool operator==(const CachePart&) const = default;
};
// Every part of an n_layers model, layer-major, K before V: part i is layer i / 2, K when i is even.
std::vector<CachePart> AllParts(int n_layers);

// A candidate of --formats: a format and the protections that go with it, e.g. q4_0 with rot=1.
struct FormatCandidate {
  KvFormat format = KvFormat::kF32;
  KvSettings protections;    // scale, scale_by, group, recent, sink, rot, outliers, prerope; never k or v
  std::string name() const;  // "q4_0,rot=1": the format, then its protections in canonical key order
};
// --formats values (the flag is repeatable): comma-separated; an element with '=' is a protection
// of the format before it, so "q8_0,q4_0,rot=1,kivi2" is q8_0, q4_0 with rot=1, and kivi2. An
// unknown format, a key that is not a protection (k, v, kv, engine), a value the --kv grammar
// refuses, a key given twice, a candidate given twice or no candidate at all is BadInput naming
// --formats.
Expected<std::vector<FormatCandidate>> ParseCandidates(const std::vector<std::string>& args);

// The configurations of one candidate against a baseline (results name them by spec()). A
// protection is a per-(layer, KV head) setting of the grammar, shared by K and V: it stays on the
// other tensor of a part's layer, and does nothing to a tensor stored in the baseline's
// unquantized format.
struct CandidateSpecs {
  CacheConfig all_quantized;               // baseline settings with k=F,v=F and the protections
  CacheConfig k_only, v_only;              // only K (only V) quantized, everywhere: the proxy's configurations
  std::vector<CacheConfig> one_at_a_time;  // [n_parts] baseline;layers=l:k=F,<protections>
  std::vector<CacheConfig> leave_one_out;  // [n_parts] all quantized;layers=l:k=<baseline K format>
};
// baseline: uniform (no per-layer override; BadInput naming --baseline otherwise). A candidate that
// equals the baseline is BadInput naming --formats.
Expected<CandidateSpecs> MakeCandidateSpecs(const CacheConfig& baseline, const FormatCandidate& candidate,
                                            int n_layers);

// How many parts `--stage auto` measures end to end: max(4, ⌈n_parts / 4⌉), at most n_parts.
int AutoTopK(int n_parts);
// The indices of the k largest scores, largest first; equal scores keep part order (lower first).
std::vector<int> TopParts(const std::vector<double>& scores, int k);

}  // namespace kvaudit
