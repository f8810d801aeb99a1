// The global/sliding shape (MixShape::kByKind): one (K, V) choice for every sliding-window layer and
// one for every global layer — `k=..,v=..;layers=sliding:k=..,v=..` in the --kv grammar. On gpt-oss
// and Gemma the two kinds hold very different amounts of cache at long context (a sliding layer
// keeps its window, a global one every position: decide/targets/kv_cells.h), so a team's natural
// question "quantize only the global layers?" is a point of this front.
#include <string>
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

// The choice indices, per layer of the kind, of each candidate text that every such layer offers
// for `tensor` (in the first such layer's order).
std::vector<std::vector<uint8_t>> CommonToKind(const MixProblem& m, const std::vector<int>& layers, char tensor) {
  std::vector<std::vector<uint8_t>> out;  // [n_common][n_layers]
  const Part& first = m.part(layers.front(), tensor);
  for (size_t c = 0; c < first.choices.size(); ++c) {
    const std::string& text = m.candidate(layers.front(), tensor, static_cast<int>(c)).text;
    std::vector<uint8_t> index(m.n_layers(), 0);
    bool everywhere = true;
    for (int l : layers) {
      const int n = static_cast<int>(m.part(l, tensor).choices.size());
      int found = -1;
      for (int i = 0; i < n && found < 0; ++i) {
        if (m.candidate(l, tensor, i).text == text) found = i;
      }
      everywhere = everywhere && found >= 0;
      if (found >= 0) index[l] = static_cast<uint8_t>(found);
    }
    if (everywhere) out.push_back(std::move(index));
  }
  return out;
}

std::vector<KindOption> KindOptions(const MixProblem& m, bool sliding) {
  std::vector<int> layers;
  for (int l = 0; l < m.n_layers(); ++l) {
    if (m.sliding(l) == sliding) layers.push_back(l);
  }
  const auto ks = CommonToKind(m, layers, 'k'), vs = CommonToKind(m, layers, 'v');
  std::vector<KindOption> out;
  for (const auto& k : ks) {
    for (const auto& v : vs) {
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
