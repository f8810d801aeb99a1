// The global/sliding shape (MixShape::kByKind): one (K, V) choice for every sliding-window layer and
// one for every global layer — `k=..,v=..;layers=sliding:k=..,v=..` in the --kv grammar. On gpt-oss
// and Gemma the two kinds hold very different amounts of cache at long context (a sliding layer
// keeps its window, a global one every position: decide/targets/kv_cells.h), so a team's natural
// question "quantize only the global layers?" is a point of this front.
#include <vector>

#include "decide/search/mix_front.h"

namespace kvaudit::mix_detail {
namespace {

// One way to store every layer of one kind: its K and V choice indices per layer (entries of the
// other kind's layers unused), with the bytes and cost summed over the kind's layers.
struct KindOption {
  uint64_t bytes = 0;
  int64_t cost = 0;
  std::vector<uint8_t> k, v;  // [n_layers]
};

std::vector<KindOption> KindOptions(const MixProblem& m, bool sliding) {
  std::vector<int> layers;
  for (int l = 0; l < m.n_layers(); ++l) {
    if (m.sliding(l) == sliding) layers.push_back(l);
  }
  const CommonChoices ks = CommonTo(m, 'k', layers), vs = CommonTo(m, 'v', layers);
  std::vector<KindOption> out;
  for (const auto& k : ks.index) {
    for (const auto& v : vs.index) {
      KindOption o{0, 0, k, v};
      bool shares = true;
      for (int l : layers) {
        shares = shares && m.Compatible(l, k[l], v[l]);
        o.bytes += m.part(l, 'k').choices[k[l]].bytes_per_token + m.part(l, 'v').choices[v[l]].bytes_per_token;
        o.cost += m.FixedCost(l, 'k', k[l]) + m.FixedCost(l, 'v', v[l]);
      }
      if (shares) out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace

MixFront ByKindFront(const MixProblem& m) {
  if (!m.HasBothLayerKinds()) return {};
  const std::vector<KindOption> global = KindOptions(m, false), sliding = KindOptions(m, true);
  std::vector<Scored> points;
  points.reserve(global.size() * sliding.size());
  for (const KindOption& g : global) {
    for (const KindOption& s : sliding) {
      Scored p{g.bytes + s.bytes, g.cost + s.cost, std::vector<uint8_t>(2 * m.n_layers())};
      for (int l = 0; l < m.n_layers(); ++l) {
        const KindOption& o = m.sliding(l) ? s : g;
        p.choice[MixProblem::Index(l, 'k')] = o.k[l];
        p.choice[MixProblem::Index(l, 'v')] = o.v[l];
      }
      points.push_back(std::move(p));
    }
  }
  return FrontOf(m, std::move(points));
}

}  // namespace kvaudit::mix_detail
