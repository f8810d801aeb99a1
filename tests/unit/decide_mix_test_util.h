// Shared by the mix-search unit tests: seeded random instances and a brute-force front that
// enumerates every assignment, written independently of the searches.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "decide/search/mix_search.h"
#include "support/random_rows.h"

namespace kvaudit::testing {

// Parts of n_layers layers. Each part draws up to max_choices candidates from `pool` (the first,
// f16, always, at cost 0), bytes in [1, 64] × byte_scale + byte_offset, costs k/64 for k in
// [0, 24): dyadic, so every sum is exact in any order and ties are frequent. same_lists: every
// layer offers the same candidates (the shapes that need choices common to all layers).
inline std::vector<Part> RandomParts(Rng& rng, int n_layers, int max_choices, const std::vector<std::string>& pool,
                                     bool same_lists, uint64_t byte_scale = 1, uint64_t byte_offset = 0) {
  std::map<char, std::vector<std::string>> shared;  // tensor -> its list, with same_lists
  auto draw_list = [&] {
    std::vector<std::string> list = {pool[0]};
    const int n = 1 + static_cast<int>(rng.Below(static_cast<uint32_t>(max_choices)));
    while (static_cast<int>(list.size()) < n) {
      const std::string& c = pool[rng.Below(static_cast<uint32_t>(pool.size()))];
      if (std::find(list.begin(), list.end(), c) == list.end()) list.push_back(c);
    }
    return list;
  };
  std::vector<Part> parts;
  for (int l = 0; l < n_layers; ++l) {
    for (char t : {'k', 'v'}) {
      if (!same_lists || l == 0) shared[t] = draw_list();
      Part p{l, t, {}};
      for (const std::string& c : shared[t]) {
        const bool base = p.choices.empty();
        p.choices.push_back({c, base ? 0.0 : rng.Below(24) / 64.0, (1 + rng.Below(64)) * byte_scale + byte_offset});
      }
      parts.push_back(std::move(p));
    }
  }
  return parts;
}

// Number of runs of equal texts along the layers of one tensor.
inline int Runs(const MixProblem& m, const std::vector<uint8_t>& choice, char t) {
  int runs = 0;
  std::string prev;
  for (int l = 0; l < m.n_layers(); ++l) {
    const std::string& text = m.candidate(l, t, choice[MixProblem::Index(l, t)]).text;
    if (l == 0 || text != prev) ++runs;
    prev = text;
  }
  return runs;
}

// A text offered by every layer for tensor t.
inline bool Common(const MixProblem& m, const std::string& text, char t) {
  for (int l = 0; l < m.n_layers(); ++l) {
    bool found = false;
    for (size_t i = 0; i < m.part(l, t).choices.size(); ++i)
      found = found || m.candidate(l, t, static_cast<int>(i)).text == text;
    if (!found) return false;
  }
  return true;
}

// One text per tensor across the layers of each kind (sliding, global), on a model with both.
inline bool OneTextPerKind(const MixProblem& m, const std::vector<uint8_t>& choice) {
  if (!m.HasBothLayerKinds()) return false;
  for (char t : {'k', 'v'}) {
    std::map<bool, std::string> text;  // sliding -> the kind's text
    for (int l = 0; l < m.n_layers(); ++l) {
      const std::string& here = m.candidate(l, t, choice[MixProblem::Index(l, t)]).text;
      auto [it, first] = text.try_emplace(m.sliding(l), here);
      if (!first && it->second != here) return false;
    }
  }
  return true;
}

// A quantized (K text, V text) that vLLM stores as one dtype: the same text, or a TurboQuant
// preset's pair of unmodified formats.
inline bool VllmPair(const MixProblem& m, const std::string& k, const std::string& v) {
  if (k == v) return true;
  const auto fk = KvFormatFromName(k), fv = KvFormatFromName(v);  // a bare format name: no modifiers
  return fk && fv && TurboQuantPresetFor(*fk, *fv) != nullptr && Common(m, k, 'k') && Common(m, v, 'v');
}

// skip-layers: every quantized layer stores (K, V) as one quantized pair that vLLM stores as one
// dtype and every layer offers (a preset's pair leaves the end layers unquantized), every other
// layer both tensors as the first full-precision text every layer offers for both.
inline bool QuantizedTypePlusFullLayers(const MixProblem& m, const std::vector<uint8_t>& choice) {
  std::string first_full;  // layer 0's first full-precision text offered everywhere for K and V
  for (size_t i = 0; i < m.part(0, 'k').choices.size() && first_full.empty(); ++i) {
    const Candidate& c = m.candidate(0, 'k', static_cast<int>(i));
    if (IsFullPrecision(c.format) && Common(m, c.text, 'k') && Common(m, c.text, 'v')) first_full = c.text;
  }
  if (first_full.empty()) return false;
  std::string qk, qv;  // the quantized pair
  for (int l = 0; l < m.n_layers(); ++l) {
    const Candidate& k = m.candidate(l, 'k', choice[MixProblem::Index(l, 'k')]);
    const Candidate& v = m.candidate(l, 'v', choice[MixProblem::Index(l, 'v')]);
    if (IsFullPrecision(k.format) || IsFullPrecision(v.format)) {
      if (k.text != first_full || v.text != first_full) return false;
      continue;
    }
    if (!Common(m, k.text, 'k') || !Common(m, v.text, 'v') || !VllmPair(m, k.text, v.text)) return false;
    if (!qk.empty() && (qk != k.text || qv != v.text)) return false;
    qk = k.text, qv = v.text;
  }
  if (!qk.empty()) {
    if (qk == qv) return true;
    for (int l = 0; l < m.n_layers(); ++l) {  // a preset: its end layers unquantized
      if (IsEndLayer(l, m.n_layers()) && m.candidate(l, 'k', choice[MixProblem::Index(l, 'k')]).text != first_full)
        return false;
    }
    return true;
  }
  // All full precision: a point of the shape when some quantized pair is offered everywhere.
  for (size_t a = 0; a < m.part(0, 'k').choices.size(); ++a) {
    for (size_t b = 0; b < m.part(0, 'v').choices.size(); ++b) {
      const Candidate& k = m.candidate(0, 'k', static_cast<int>(a));
      const Candidate& v = m.candidate(0, 'v', static_cast<int>(b));
      if (!IsFullPrecision(k.format) && !IsFullPrecision(v.format) && Common(m, k.text, 'k') &&
          Common(m, v.text, 'v') && (k.text != v.text || Common(m, k.text, 'v')) && VllmPair(m, k.text, v.text))
        return true;
    }
  }
  return false;
}

// Whether an assignment has the shape: uniform = one text per tensor, first/last = at most three
// runs per tensor, each of a text every layer offers, global/sliding = one text per tensor per
// kind of layer; every layer's pair shares the layer.
inline bool HasShape(const MixProblem& m, const std::vector<uint8_t>& choice, MixShape shape) {
  for (int l = 0; l < m.n_layers(); ++l) {
    if (!m.Compatible(l, choice[MixProblem::Index(l, 'k')], choice[MixProblem::Index(l, 'v')])) return false;
  }
  if (shape == MixShape::kPerLayer) return true;
  if (shape == MixShape::kByKind) return OneTextPerKind(m, choice);
  if (shape == MixShape::kSkipLayers) return QuantizedTypePlusFullLayers(m, choice);
  for (char t : {'k', 'v'}) {
    if (Runs(m, choice, t) > (shape == MixShape::kUniform ? 1 : 3)) return false;
    for (int l = 0; l < m.n_layers(); ++l) {
      if (!Common(m, m.candidate(l, t, choice[MixProblem::Index(l, t)]).text, t)) return false;
    }
  }
  return true;
}

// Every assignment in lexicographic order (part 0 most significant); per total bytes the first of
// the least cost is kept, then the strictly decreasing sweep.
inline MixFront BruteFront(const MixProblem& m, MixShape shape) {
  const int n = 2 * m.n_layers();
  std::vector<uint8_t> choice(n, 0);
  std::map<uint64_t, MixPoint> best;  // bytes -> first assignment of least cost
  for (;;) {
    if (HasShape(m, choice, shape)) {
      MixPoint p = m.Evaluate(choice);
      auto it = best.find(p.bytes_per_token);
      if (it == best.end() || p.cost < it->second.cost) best[p.bytes_per_token] = p;
    }
    int i = n - 1;
    while (i >= 0 && ++choice[i] == m.part(i / 2, i % 2 ? 'v' : 'k').choices.size()) choice[i--] = 0;
    if (i < 0) break;
  }
  MixFront front;
  for (auto& [bytes, p] : best) {
    if (front.empty() || p.cost < front.back().cost) front.push_back(p);
  }
  return front;
}

inline void ExpectSameFront(const MixFront& got, const MixFront& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].bytes_per_token, want[i].bytes_per_token) << what << " point " << i;
    EXPECT_EQ(got[i].cost, want[i].cost) << what << " point " << i;
    EXPECT_EQ(got[i].choice, want[i].choice) << what << " point " << i;
  }
}

}  // namespace kvaudit::testing
