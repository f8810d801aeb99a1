// The first/last shape (ik_llama.cpp PR #1599: -ctk TYPE with -ctk-first TYPE,N and -ctk-last
// TYPE,M, the same for V): per tensor, every (base, first, N, last, M) with N + M <= n_layers is
// scored in O(1) from prefix sums and kept per byte bin; K and V are independent (every common K
// choice shares a layer with every common V choice, checked), so the front of the whole cache is
// the front of the sums of the two tensors' fronts.
#include <algorithm>
#include <numeric>

#include "decide/search/mix_front.h"

namespace kvaudit::mix_detail {
namespace {

struct FirstLast {
  uint8_t base = 0, first = 0, last = 0;  // indices into CommonChoices
  int n_first = 0, n_last = 0;
};

// One tensor's choices over the layers, with prefix sums for O(1) scoring of a FirstLast.
class TensorTable {
 public:
  TensorTable(const MixProblem& m, char tensor) : common_(CommonTo(m, tensor)), L_(m.n_layers()) {
    const size_t T = common_.text.size();
    bytes_.assign(T, std::vector<uint64_t>(L_ + 1, 0));
    cost_.assign(T, std::vector<int64_t>(L_ + 1, 0));
    lo_ = 0, g_ = 0;
    for (int l = 0; l < L_ && T > 0; ++l) {
      uint64_t lo = UINT64_MAX;
      for (size_t t = 0; t < T; ++t) lo = std::min(lo, Bytes(m, tensor, t, l));
      for (size_t t = 0; t < T; ++t) {
        g_ = std::gcd(g_, Bytes(m, tensor, t, l) - lo);
        bytes_[t][l + 1] = bytes_[t][l] + Bytes(m, tensor, t, l);
        cost_[t][l + 1] = cost_[t][l] + m.FixedCost(l, tensor, common_.index[t][l]);
      }
      lo_ += lo;
    }
    if (g_ == 0) g_ = 1;
  }

  const CommonChoices& common() const { return common_; }
  size_t n_types() const { return common_.text.size(); }
  uint64_t lo() const { return lo_; }
  uint64_t g() const { return g_; }
  int TypeAt(const FirstLast& c, int l) const {
    return l < c.n_first ? c.first : (l >= L_ - c.n_last ? c.last : c.base);
  }
  int ChoiceAt(const FirstLast& c, int l) const { return common_.index[TypeAt(c, l)][l]; }
  uint64_t BytesOf(const FirstLast& c) const { return Sum(bytes_, c); }
  int64_t CostOf(const FirstLast& c) const { return Sum(cost_, c); }

 private:
  uint64_t Bytes(const MixProblem& m, char tensor, size_t t, int l) const {
    return m.part(l, tensor).choices[common_.index[t][l]].bytes_per_token;
  }
  template <class V>
  V Sum(const std::vector<std::vector<V>>& pre, const FirstLast& c) const {
    const int mid_end = L_ - c.n_last;
    return pre[c.first][c.n_first] + (pre[c.base][mid_end] - pre[c.base][c.n_first]) +
           (pre[c.last][L_] - pre[c.last][mid_end]);
  }

  CommonChoices common_;
  int L_;
  std::vector<std::vector<uint64_t>> bytes_;  // [n_types][n_layers + 1] prefix sums of bytes
  std::vector<std::vector<int64_t>> cost_;    // [n_types][n_layers + 1] prefix sums of fixed costs
  uint64_t lo_ = 0, g_ = 1;                   // fewest bytes of any assignment; GCD of differences
};

// Lexicographic order of the choice indices of two assignments, by layer.
int CompareAt(const TensorTable& t, const FirstLast& a, const FirstLast& b, int l) {
  return t.ChoiceAt(a, l) - t.ChoiceAt(b, l);
}

struct TensorPoint {
  uint64_t bytes = 0;
  int64_t cost = 0;
  FirstLast config;
};

// The front of one tensor over every FirstLast: the cheapest config per byte bin (ties: the
// smallest assignment), then the strictly decreasing sweep.
std::vector<TensorPoint> TensorFront(const TensorTable& t, int L) {
  const int T = static_cast<int>(t.n_types());
  std::vector<TensorPoint> bins;  // [n_bins] by (bytes - lo) / g; cost kInf where none
  auto consider = [&](const FirstLast& c) {
    const uint64_t bytes = t.BytesOf(c);
    const int64_t cost = t.CostOf(c);
    const size_t bin = (bytes - t.lo()) / t.g();
    if (bin >= bins.size()) bins.resize(bin + 1, TensorPoint{0, kInf, {}});
    TensorPoint& b = bins[bin];
    int order = cost < b.cost ? -1 : (cost > b.cost ? 1 : 0);
    for (int l = 0; l < L && order == 0; ++l) order = CompareAt(t, c, b.config, l);
    if (order < 0) b = {bytes, cost, c};
  };
  for (int base = 0; base < T; ++base) {
    for (int nf = 0; nf <= L; ++nf) {
      for (int first = 0; first < T; ++first) {
        if ((nf == 0) != (first == base)) continue;  // N = 0 has no first type; N > 0 another type
        for (int nl = 0; nl + nf <= L; ++nl) {
          for (int last = 0; last < T; ++last) {
            if ((nl == 0) != (last == base)) continue;
            consider({static_cast<uint8_t>(base), static_cast<uint8_t>(first), static_cast<uint8_t>(last), nf, nl});
          }
        }
      }
    }
  }
  std::vector<TensorPoint> front;
  for (const TensorPoint& b : bins) {
    if (b.cost < kReachable && (front.empty() || b.cost < front.back().cost)) front.push_back(b);
  }
  return front;
}

void CheckIndependent(const MixProblem& m, const TensorTable& k, const TensorTable& v) {
  for (size_t a = 0; a < k.n_types(); ++a) {
    for (size_t b = 0; b < v.n_types(); ++b) {
      for (int l = 0; l < m.n_layers(); ++l) {
        KV_CHECK_MSG(m.Compatible(l, k.common().index[a][l], v.common().index[b][l]),
                     ("first/last search: K choice " + k.common().text[a] + " and V choice " + v.common().text[b] +
                      " cannot share a layer (one's modifiers would change the other's storage); ik_llama.cpp "
                      "sets no modifier per layer: give every quantized choice the same modifiers")
                         .c_str());
      }
    }
  }
}

}  // namespace

MixFront FirstLastFront(const MixProblem& m) {
  const int L = m.n_layers();
  const TensorTable tk(m, 'k'), tv(m, 'v');
  if (tk.n_types() == 0 || tv.n_types() == 0) return {};
  CheckIndependent(m, tk, tv);
  const std::vector<TensorPoint> fk = TensorFront(tk, L), fv = TensorFront(tv, L);
  // The whole cache: the cheapest (K point, V point) per byte bin; a tie goes to the smaller
  // assignment read layer 0 K, layer 0 V, layer 1 K, ...
  const uint64_t g = std::gcd(tk.g(), tv.g()), lo = tk.lo() + tv.lo();
  struct Pair {
    int64_t cost = kInf;
    size_t i = 0, j = 0;
  };
  std::vector<Pair> bins;  // [n_bins] by (bytes - lo) / g
  for (size_t i = 0; i < fk.size(); ++i) {
    for (size_t j = 0; j < fv.size(); ++j) {
      const size_t bin = (fk[i].bytes + fv[j].bytes - lo) / g;
      if (bin >= bins.size()) bins.resize(bin + 1);
      Pair& b = bins[bin];
      const int64_t cost = fk[i].cost + fv[j].cost;
      int order = cost < b.cost ? -1 : (cost > b.cost ? 1 : 0);
      for (int l = 0; l < L && order == 0; ++l) {
        order = CompareAt(tk, fk[i].config, fk[b.i].config, l);
        if (order == 0) order = CompareAt(tv, fv[j].config, fv[b.j].config, l);
      }
      if (order < 0) b = {cost, i, j};
    }
  }
  MixFront front;
  int64_t best = kReachable;
  for (const Pair& b : bins) {
    if (b.cost >= best) continue;
    best = b.cost;
    std::vector<uint8_t> choice(2 * L);  // [2 · n_layers]
    for (int l = 0; l < L; ++l) {
      choice[MixProblem::Index(l, 'k')] = static_cast<uint8_t>(tk.ChoiceAt(fk[b.i].config, l));
      choice[MixProblem::Index(l, 'v')] = static_cast<uint8_t>(tv.ChoiceAt(fv[b.j].config, l));
    }
    front.push_back(m.Evaluate(std::move(choice)));
  }
  return front;
}

}  // namespace kvaudit::mix_detail
