#include "kv/quant_attention.h"

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
  const int hd = s.head_dim, G = s.group, rows = n_tok * G;
  std::memset(o, 0, sizeof(float) * rows * hd);
  for (int r = 0; r < rows; ++r) {
    const int p = pos0 + r / G;
    const int lo = std::max(FirstKey(s, p), k0), hi = std::min(p, k1 - 1);
    if (lo > hi) {
      part[r] = {kNegInf, 0.0f};
      continue;
    }
    const int len = hi - lo + 1;
    k.Dot(qs + static_cast<int64_t>(r) * hd, p, lo, hi + 1, scores);
    const float mx = MaxOf(scores, len);
    const float sum = ExpSubSum(scores, len, mx);
    v.WeightedSum(scores, p, lo, hi + 1, o + static_cast<int64_t>(r) * hd);
    part[r] = {mx, sum};
  }
}

}  // namespace kvaudit
