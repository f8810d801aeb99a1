#include "decide/targets/target_view.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kvaudit {

bool SameHeadConfig(const HeadConfig& a, const HeadConfig& b) {
  return a.k == b.k && a.v == b.v && a.scale == b.scale && a.scale_by == b.scale_by && a.group == b.group &&
         a.recent == b.recent && a.sink == b.sink && a.rot == b.rot && a.outliers == b.outliers &&
         a.pre_rope == b.pre_rope;
}

TargetView TargetView::Of(const CacheConfig& cache_config, const ModelConfig& config) {
  TargetView v;
  v.spec = cache_config.spec();
  v.attention = cache_config.attention();
  v.head_dim = config.head_dim;
  v.ckpt_scales_per_layer = config.kv_scales.per_layer;
  for (int layer = 0; layer < config.n_layers; ++layer) {
    const HeadConfig first = cache_config.ForHead(config, layer, 0);
    for (int head = 1; head < config.n_kv_heads; ++head) {
      if (!SameHeadConfig(first, cache_config.ForHead(config, layer, head))) v.heads_differ = true;
    }
    v.layers.push_back({first.k, first.v});
    v.heads.push_back(first);
  }
  return v;
}

bool TargetView::FormatsUniform() const {
  return std::all_of(layers.begin(), layers.end(), [&](const LayerKv& l) { return l == layers.front(); });
}

bool TargetView::HeadsUniform() const {
  return std::all_of(heads.begin(), heads.end(), [&](const HeadConfig& p) { return SameHeadConfig(p, heads.front()); });
}

std::string TargetView::KvauditOnlyProtections() const {
  int sink = 0, recent = 0, outliers = 0;
  bool pre_rope = false;
  for (const HeadConfig& p : heads) {
    sink = std::max(sink, p.sink);
    outliers = std::max(outliers, p.outliers);
    pre_rope = pre_rope || p.pre_rope;
    // KIVI's residual is part of the format (engines that have KIVI-like caches set it).
    if (!IsKivi(p.k) && !IsKivi(p.v)) recent = std::max(recent, p.Recent());
  }
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (sink) add("sink=" + std::to_string(sink));
  if (recent) add("recent=" + std::to_string(recent));
  if (outliers) add("outliers=" + std::to_string(outliers));
  if (pre_rope) add("prerope=1");
  return out;
}

bool TargetView::AnyQuantized() const {
  return std::any_of(layers.begin(), layers.end(),
                     [](const LayerKv& l) { return !IsFullPrecision(l.k) || !IsFullPrecision(l.v); });
}

CacheConfig PairSpec(const LayerKv& pair, const CandidateKeys& keys) {
  KvSettings s = keys.mods;
  s.k = pair.k, s.v = pair.v;
  return CacheConfig::Uniform(s, keys.attention);
}

namespace {

LayerKv MostCommon(const std::vector<LayerKv>& layers) {
  std::map<std::pair<int, int>, int> counts;
  for (const LayerKv& l : layers) ++counts[{static_cast<int>(l.k), static_cast<int>(l.v)}];
  LayerKv best = layers.front();
  int best_n = 0;
  for (const LayerKv& l : layers) {  // first in layer order wins ties
    const int n = counts[{static_cast<int>(l.k), static_cast<int>(l.v)}];
    if (n > best_n) best = l, best_n = n;
  }
  return best;
}

}  // namespace

CacheConfig LayeredSpec(const std::vector<LayerKv>& layers, const CandidateKeys& keys) {
  const LayerKv base = MostCommon(layers);
  CacheConfig config = PairSpec(base, keys);
  const int n = static_cast<int>(layers.size());
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && layers[j + 1] == layers[i]) ++j;
    if (!(layers[i] == base)) config = config.WithLayers({i, j}, PairSpec(layers[i]).defaults());
    i = j + 1;
  }
  return config;
}

double DefaultBits(KvFormat f, int head_dim) { return HeadConfig{}.BitsPerElement(f, head_dim); }

KvFormat Nearest(KvFormat f, const std::vector<KvFormat>& have, int head_dim) {
  if (std::find(have.begin(), have.end(), f) != have.end()) return f;
  const double bits = DefaultBits(f, head_dim);
  KvFormat best = have.front();
  double best_d = 1e9, best_bits = 0;
  for (KvFormat c : have) {
    const double b = DefaultBits(c, head_dim), d = std::fabs(b - bits);
    if (d < best_d - 1e-9 || (std::fabs(d - best_d) <= 1e-9 && b > best_bits + 1e-9)) {
      best = c, best_d = d, best_bits = b;
    }
  }
  return best;
}

std::vector<LayerKv> UniformStandIns(const TargetView& view) {
  std::vector<LayerKv> out = {MostCommon(view.layers)};
  LayerKv safest = view.layers.front();
  for (const LayerKv& l : view.layers) {
    if (DefaultBits(l.k, view.head_dim) > DefaultBits(safest.k, view.head_dim)) safest.k = l.k;
    if (DefaultBits(l.v, view.head_dim) > DefaultBits(safest.v, view.head_dim)) safest.v = l.v;
  }
  if (!(safest == out.front())) out.push_back(safest);
  return out;
}

}  // namespace kvaudit
