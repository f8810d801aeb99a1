#include "kv/attention/quant_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/activation.h"

namespace kvaudit {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

void AttendChunkStores(const AttnShape& s, const float* qs, int n_tok, int pos0, const TensorStore& k,
                       const TensorStore& v, int k0, int k1, float* o, PartialRow* part, float* scores) {
  const int hd = s.head_dim, G = s.group, n_keys = k1 - k0;
  std::memset(o, 0, sizeof(float) * n_tok * G * hd);
  for (int t = 0; t < n_tok; ++t) {  // rows t·G .. t·G+G-1 share position p, hence lo and hi
    const int p = pos0 + t, r0 = t * G;
    const int lo = std::max(FirstKey(s, p), k0), hi = std::min(p, k1 - 1);
    if (lo > hi) {
      for (int j = 0; j < G; ++j) part[r0 + j] = {kNegInf, 0.0f};
      continue;
    }
    const int len = hi - lo + 1;
    k.DotMulti(qs + static_cast<int64_t>(r0) * hd, hd, G, p, lo, hi + 1, scores, n_keys);  // scores [G, n_keys]
    for (int j = 0; j < G; ++j) {
      float* sc = scores + static_cast<int64_t>(j) * n_keys;
      SoftcapScores(s, sc, len);
      const float mx = MaxOf(sc, len);
      part[r0 + j] = {mx, ExpSubSum(sc, len, mx)};
    }
    v.WeightedSumMulti(scores, n_keys, G, p, lo, hi + 1, o + static_cast<int64_t>(r0) * hd, hd);
  }
}

}  // namespace kvaudit
