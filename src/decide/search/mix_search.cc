#include "decide/search/mix_search.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

#include "decide/search/mix_front.h"

namespace kvaudit {
namespace mix_detail {

MixFront FrontOf(const MixProblem& m, std::vector<Scored> points) {
  std::sort(points.begin(), points.end(), [](const Scored& a, const Scored& b) {
    return std::tie(a.bytes, a.cost, a.choice) < std::tie(b.bytes, b.cost, b.choice);
  });
  MixFront front;
  int64_t best = std::numeric_limits<int64_t>::max();
  for (Scored& p : points) {
    if (p.cost >= best || !m.Runs(p.choice)) continue;
    best = p.cost;
    front.push_back({p.bytes, static_cast<double>(p.cost) * m.quantum(), std::move(p.choice)});
  }
  return front;
}

CommonChoices CommonTo(const MixProblem& m, char tensor, const std::vector<int>& layers) {
  CommonChoices out;
  const int first = layers.front();
  for (size_t c = 0; c < m.part(first, tensor).choices.size(); ++c) {
    const std::string& text = m.candidate(first, tensor, static_cast<int>(c)).text;
    std::vector<uint8_t> index(m.n_layers(), 0);  // [n_layers]
    bool everywhere = true;
    for (size_t j = 0; j < layers.size() && everywhere; ++j) {
      const int l = layers[j], n = static_cast<int>(m.part(l, tensor).choices.size());
      int found = -1;
      for (int i = 0; i < n && found < 0; ++i) {
        if (m.candidate(l, tensor, i).text == text) found = i;
      }
      everywhere = found >= 0;
      if (everywhere) index[l] = static_cast<uint8_t>(found);
    }
    if (!everywhere) continue;
    out.text.push_back(text);
    out.index.push_back(std::move(index));
  }
  return out;
}

CommonChoices CommonTo(const MixProblem& m, char tensor) {
  std::vector<int> all(m.n_layers());
  std::iota(all.begin(), all.end(), 0);
  return CommonTo(m, tensor, all);
}

}  // namespace mix_detail

namespace {

using mix_detail::kInf;
using mix_detail::kReachable;
using mix_detail::Scored;

// One way to store a whole layer: a (K, V) pair that can share it.
struct LayerOption {
  uint64_t bytes = 0;
  int64_t cost = 0;
  uint8_t k = 0, v = 0;
};

// The layer's pairs in (K index, V index) order, the tie-break order, without the pairs another
// pair dominates (no more bytes and no more cost, and fewer of one or an earlier index): such a
// pair is never in a front point (replacing it gives a point with fewer bytes and no more cost,
// or the same point with a smaller assignment).
LayerOption OptionOf(const MixProblem& m, int l, int a, int b) {
  return {m.part(l, 'k').choices[a].bytes_per_token + m.part(l, 'v').choices[b].bytes_per_token,
          m.FixedCost(l, 'k', a) + m.FixedCost(l, 'v', b), static_cast<uint8_t>(a), static_cast<uint8_t>(b)};
}

// `all` (in (K index, V index) order) without the dominated pairs.
std::vector<LayerOption> Undominated(const std::vector<LayerOption>& all);

std::vector<LayerOption> LayerOptions(const MixProblem& m, int l) {
  const Part& pk = m.part(l, 'k');
  const Part& pv = m.part(l, 'v');
  std::vector<LayerOption> all;  // [pairs that share the layer]
  for (size_t a = 0; a < pk.choices.size(); ++a) {
    for (size_t b = 0; b < pv.choices.size(); ++b) {
      if (!m.Compatible(l, static_cast<int>(a), static_cast<int>(b))) continue;
      all.push_back(OptionOf(m, l, static_cast<int>(a), static_cast<int>(b)));
    }
  }
  return Undominated(all);
}

std::vector<LayerOption> Undominated(const std::vector<LayerOption>& all) {
  std::vector<size_t> order(all.size());  // [pairs] by bytes, then cost, then index
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::tie(all[x].bytes, all[x].cost) < std::tie(all[y].bytes, all[y].cost);
  });
  std::vector<char> keep(all.size(), 0);  // [pairs]
  int64_t best = std::numeric_limits<int64_t>::max();
  for (size_t i : order) {
    if (all[i].cost < best) keep[i] = 1, best = all[i].cost;
  }
  std::vector<LayerOption> out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (keep[i]) out.push_back(all[i]);
  }
  return out;
}

// dst[b] = min(dst[b], src[b] + c) over n entries, recording p where the new value wins; a tie
// keeps the earlier option (options are relaxed in index order).
void Relax(const int64_t* src, int64_t n, int64_t c, int64_t* dst, uint8_t* arg, uint8_t p) {
  for (int64_t b = 0; b < n; ++b) {
    const int64_t v = src[b] + c;
    const bool better = v < dst[b];
    dst[b] = better ? v : dst[b];
    arg[b] = better ? p : arg[b];
  }
}

// Multiple-choice knapsack by bytes, over layers from the last to the first, so that rebuilding
// an assignment from layer 0 forward picks at each layer the earliest option that is optimal for
// what remains: the lexicographically smallest optimal assignment (docs/decision.md, "Search").
class PerLayerDp {
 public:
  static constexpr size_t kMaxTableBytes = size_t{1} << 31;

  explicit PerLayerDp(const MixProblem& m) : PerLayerDp(m, AllOptions(m)) {}
  // Over given options per layer ([n_layers][options], each non-empty, in (K, V) index order).
  PerLayerDp(const MixProblem& m, std::vector<std::vector<LayerOption>> options)
      : m_(m), L_(m.n_layers()), options_(std::move(options)), lo_(L_), hi_(L_) {
    for (int l = 0; l < L_; ++l) {
      lo_[l] = hi_[l] = options_[l].front().bytes;
      for (const LayerOption& o : options_[l]) lo_[l] = std::min(lo_[l], o.bytes), hi_[l] = std::max(hi_[l], o.bytes);
      for (const LayerOption& o : options_[l]) g_ = std::gcd(g_, o.bytes - lo_[l]);
      base_ += lo_[l];
    }
    if (g_ == 0) g_ = 1;  // every layer has one size
    width_.assign(L_ + 1, 0);
    row_.assign(L_ + 1, 0);
    for (int l = L_ - 1; l >= 0; --l) width_[l] = width_[l + 1] + static_cast<int64_t>((hi_[l] - lo_[l]) / g_);
    for (int l = 0; l < L_; ++l) row_[l + 1] = row_[l] + static_cast<size_t>(width_[l] + 1);
    // Real caches need megabytes (BENCHMARKS.md, "Mix search"); beyond this the bytes were not
    // per-token figures of one model.
    KV_CHECK_MSG(row_[L_] <= kMaxTableBytes,
                 ("per-layer search: the back-pointer table would take " + std::to_string(row_[L_]) +
                  " bytes; part bytes this spread and "
                  "this fine-grained are not a KV cache's per-token bytes")
                     .c_str());
  }

  static std::vector<std::vector<LayerOption>> AllOptions(const MixProblem& m) {
    std::vector<std::vector<LayerOption>> out(m.n_layers());
    for (int l = 0; l < m.n_layers(); ++l) out[l] = LayerOptions(m, l);
    return out;
  }

  // D_l[b] = min over options o of layer l: cost(o) + D_{l+1}[b − bins(o)], for l = L−1 .. 0.
  // Returns D_0 and fills the back-pointers.
  std::vector<int64_t> Fill() {
    arg_.assign(row_[L_], 0);
    std::vector<int64_t> cur(width_[0] + 1, kInf), next(width_[0] + 1);  // [width_0 + 1] min suffix cost by bin
    cur[0] = 0;                                                          // the empty suffix
    for (int l = L_ - 1; l >= 0; --l) {
      std::fill(next.begin(), next.begin() + width_[l] + 1, kInf);
      for (size_t p = 0; p < options_[l].size(); ++p) {
        const int64_t e = Bins(l, options_[l][p]);
        Relax(cur.data(), width_[l + 1] + 1, options_[l][p].cost, next.data() + e, arg_.data() + row_[l] + e,
              static_cast<uint8_t>(p));
      }
      std::swap(cur, next);
    }
    return cur;
  }

  // The assignment of bin b of D_0, from layer 0 forward; checked against the table's sums.
  MixPoint Rebuild(int64_t b, int64_t cost) const {
    std::vector<uint8_t> choice(2 * L_);  // [2 · n_layers]
    int64_t rem = b;
    for (int l = 0; l < L_; ++l) {
      const LayerOption& o = options_[l][arg_[row_[l] + rem]];
      choice[MixProblem::Index(l, 'k')] = o.k;
      choice[MixProblem::Index(l, 'v')] = o.v;
      rem -= Bins(l, o);
    }
    KV_CHECK(rem == 0);
    MixPoint p = m_.Evaluate(std::move(choice));
    KV_CHECK(p.bytes_per_token == base_ + static_cast<uint64_t>(b) * g_ &&
             p.cost == static_cast<double>(cost) * m_.quantum());
    return p;
  }

 private:
  int64_t Bins(int l, const LayerOption& o) const { return static_cast<int64_t>((o.bytes - lo_[l]) / g_); }

  const MixProblem& m_;
  int L_;
  std::vector<std::vector<LayerOption>> options_;  // [n_layers][options]
  std::vector<uint64_t> lo_, hi_;                  // [n_layers] fewest and most bytes of a layer
  uint64_t g_ = 0, base_ = 0;                      // bin size; Σ lo
  std::vector<int64_t> width_;                     // [n_layers + 1] bins of the suffix l..L-1, minus one
  std::vector<size_t> row_;                        // [n_layers + 1] where layer l's back-pointers start
  std::vector<uint8_t> arg_;                       // [n_layers][width_l + 1] layer l's option by suffix bin
};

MixFront FrontOfDp(PerLayerDp& dp) {
  const std::vector<int64_t> cost = dp.Fill();  // [bins] least cost by bytes above the minimum
  MixFront front;
  int64_t best = kReachable;
  for (int64_t b = 0; b < static_cast<int64_t>(cost.size()); ++b) {
    if (cost[b] >= best) continue;
    best = cost[b];
    front.push_back(dp.Rebuild(b, best));
  }
  return front;
}

MixFront PerLayerFront(const MixProblem& m) {
  PerLayerDp dp(m);
  return FrontOfDp(dp);
}

// A way to store K and V of every quantized layer: one candidate text every layer offers for both
// tensors, or a TurboQuant preset's pair (K and V texts without modifiers), whose end layers vLLM
// keeps unquantized; with its choice index per layer and tensor. A layer the pair cannot share
// (ShareLayer) stays in full precision.
struct SharedType {
  std::vector<uint8_t> k, v;  // [n_layers]
  bool ends_full = false;     // a TurboQuant pair: the end layers (IsEndLayer) take full precision
};
std::vector<SharedType> SharedTypes(const MixProblem& m, bool full_precision) {
  const mix_detail::CommonChoices ks = mix_detail::CommonTo(m, 'k'), vs = mix_detail::CommonTo(m, 'v');
  std::vector<SharedType> out;
  for (size_t a = 0; a < ks.text.size(); ++a) {
    for (size_t b = 0; b < vs.text.size(); ++b) {
      const Candidate& k = m.candidate(0, 'k', ks.index[a][0]);
      const Candidate& v = m.candidate(0, 'v', vs.index[b][0]);
      const bool preset = !full_precision && k.mods.empty() && v.mods.empty() && !k.attention && !v.attention &&
                          TurboQuantPresetFor(k.format, v.format) != nullptr;
      if (ks.text[a] != vs.text[b] && !preset) continue;
      if (IsFullPrecision(k.format) != full_precision || IsFullPrecision(v.format) != full_precision) continue;
      // The full-precision pair must share every layer; a quantized one is kept out of the layers it
      // cannot share (SkipLayersFront).
      bool shares = true;
      for (int l = 0; l < m.n_layers() && shares && full_precision; ++l)
        shares = m.Compatible(l, ks.index[a][l], vs.index[b][l]);
      if (shares) out.push_back({ks.index[a], vs.index[b], preset});
    }
  }
  return out;
}

MixFront SkipLayersFront(const MixProblem& m) {
  const std::vector<SharedType> full = SharedTypes(m, true);
  if (full.empty()) return {};
  std::vector<Scored> points;
  for (const SharedType& t : SharedTypes(m, false)) {
    std::vector<std::vector<LayerOption>> options(m.n_layers());  // [n_layers] the type or full precision
    for (int l = 0; l < m.n_layers(); ++l) {
      const LayerOption keep = OptionOf(m, l, full[0].k[l], full[0].v[l]);
      if ((t.ends_full && IsEndLayer(l, m.n_layers())) || !m.Compatible(l, t.k[l], t.v[l])) {
        options[l] = {keep};
        continue;
      }
      std::vector<LayerOption> two = {OptionOf(m, l, t.k[l], t.v[l]), keep};
      std::sort(two.begin(), two.end(),
                [](const LayerOption& x, const LayerOption& y) { return std::tie(x.k, x.v) < std::tie(y.k, y.v); });
      options[l] = Undominated(two);
    }
    PerLayerDp dp(m, std::move(options));
    for (MixPoint& p : FrontOfDp(dp)) {
      Scored s;
      for (int l = 0; l < m.n_layers(); ++l) {
        s.cost += m.FixedCost(l, 'k', p.choice[MixProblem::Index(l, 'k')]) +
                  m.FixedCost(l, 'v', p.choice[MixProblem::Index(l, 'v')]);
      }
      s.bytes = p.bytes_per_token, s.choice = std::move(p.choice);
      points.push_back(std::move(s));
    }
  }
  return mix_detail::FrontOf(m, std::move(points));
}

MixFront UniformFront(const MixProblem& m) {
  const mix_detail::CommonChoices ks = mix_detail::CommonTo(m, 'k'), vs = mix_detail::CommonTo(m, 'v');
  std::vector<Scored> points;
  for (const auto& ki : ks.index) {
    for (const auto& vi : vs.index) {
      Scored s;
      s.choice.resize(2 * m.n_layers());
      bool shares = true;
      for (int l = 0; l < m.n_layers() && shares; ++l) {
        shares = m.Compatible(l, ki[l], vi[l]);
        s.choice[MixProblem::Index(l, 'k')] = ki[l];
        s.choice[MixProblem::Index(l, 'v')] = vi[l];
        s.bytes += m.part(l, 'k').choices[ki[l]].bytes_per_token + m.part(l, 'v').choices[vi[l]].bytes_per_token;
        s.cost += m.FixedCost(l, 'k', ki[l]) + m.FixedCost(l, 'v', vi[l]);
      }
      if (shares) points.push_back(std::move(s));
    }
  }
  return mix_detail::FrontOf(m, std::move(points));
}

}  // namespace

std::string_view MixShapeName(MixShape shape) {
  switch (shape) {
    case MixShape::kUniform: return "uniform";
    case MixShape::kFirstLast: return "first/last";
    case MixShape::kPerLayer: return "per-layer";
    case MixShape::kByKind: return "global/sliding";
    case MixShape::kSkipLayers: return "skip-layers";
  }
  return "?";
}

MixFront SearchFront(const MixProblem& problem, MixShape shape) {
  switch (shape) {
    case MixShape::kUniform: return UniformFront(problem);
    case MixShape::kFirstLast: return mix_detail::FirstLastFront(problem);
    case MixShape::kPerLayer: return PerLayerFront(problem);
    case MixShape::kByKind: return mix_detail::ByKindFront(problem);
    case MixShape::kSkipLayers: return SkipLayersFront(problem);
  }
  KV_CHECK(false);
  return {};
}

BudgetFit CheapestUnder(const MixFront& front, uint64_t budget_bytes_per_token) {
  KV_CHECK_MSG(!front.empty(), "a budget needs a front with at least one point");
  BudgetFit fit;
  const auto end = std::upper_bound(front.begin(), front.end(), budget_bytes_per_token,
                                    [](uint64_t budget, const MixPoint& p) { return budget < p.bytes_per_token; });
  fit.n_within = static_cast<size_t>(end - front.begin());
  if (fit.n_within > 0) fit.best = fit.n_within - 1;
  return fit;
}

}  // namespace kvaudit
