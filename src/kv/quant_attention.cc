#include "kv/quant_attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/activation.h"

namespace kvaudit {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Folds scores sr[0..len) (raw q·k) into the row's online-softmax state (m, l, o) and turns them
// into unnormalised probabilities e^(s − m_new).
inline void FoldScores(float* sr, int len, float& m, float& l, float* orow, int hd) {
  const float m_new = std::max(m, MaxOf(sr, len));
  const float sum = ExpSubSum(sr, len, m_new);
  if (m != m_new) {
    const float corr = std::exp(m - m_new);  // m = -inf: corr = 0 and o, l are still 0
    l *= corr;
    for (int d = 0; d < hd; ++d) orow[d] *= corr;
  }
  l += sum;
  m = m_new;
}
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

int64_t StoreTileScratchFloats(int n_tok, const AttnShape& s) {
  const int64_t rows = static_cast<int64_t>(n_tok) * s.group;
  return rows * kKeyTile + 2 * rows + 2 * static_cast<int64_t>(kKeyTile) * s.head_dim;
}

void AttendTileStores(const AttnShape& s, const float* qs, int n_tok, int pos0, const TensorStore& k,
                      const TensorStore& v, float* o, float* scratch) {
  const int hd = s.head_dim, G = s.group, rows = n_tok * G;
  float* S = scratch;                                          // [rows, kKeyTile] scores, then probabilities
  float* m = scratch + static_cast<int64_t>(rows) * kKeyTile;  // [rows] running max
  float* l = m + rows;                                         // [rows] running sum
  float* kt_rows = l + rows;                                   // [kKeyTile, hd] materialised keys
  float* vt_rows = kt_rows + static_cast<int64_t>(kKeyTile) * hd;  // [kKeyTile, hd] materialised values
  std::fill(m, m + rows, kNegInf);
  std::fill(l, l + rows, 0.0f);
  std::memset(o, 0, sizeof(float) * rows * hd);
  const int k_begin = FirstKey(s, pos0), k_end = pos0 + n_tok;  // keys [k_begin, k_end)
  // Keys [k_begin, stable) are read identically by every query of the tile (positions >= pos0).
  const int stable = std::max(k_begin, std::min({k.StableEnd(pos0), v.StableEnd(pos0), k_end}));
  for (int k0 = k_begin; k0 < stable; k0 += kKeyTile) {
    const int kt = std::min(kKeyTile, stable - k0);
    k.Materialize(pos0, k0, k0 + kt, kt_rows);
    v.Materialize(pos0, k0, k0 + kt, vt_rows);
    // S = Qs · Kᵀ  [rows, kt]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kt, hd, 1.0f, qs, hd, kt_rows, hd, 0.0f, S, kKeyTile);
    for (int r = 0; r < rows; ++r) {
      const int p = pos0 + r / G;
      const int lo = std::max(FirstKey(s, p), k0), hi = std::min(p, k0 + kt - 1);
      float* sr = S + static_cast<int64_t>(r) * kKeyTile;
      if (lo > hi) {  // causal or window: this row sees no key of the tile
        std::memset(sr, 0, sizeof(float) * kt);
        continue;
      }
      FoldScores(sr + (lo - k0), hi - lo + 1, m[r], l[r], o + static_cast<int64_t>(r) * hd, hd);
      if (lo > k0) std::memset(sr, 0, sizeof(float) * (lo - k0));
      if (hi < k0 + kt - 1) std::memset(sr + (hi - k0 + 1), 0, sizeof(float) * (k0 + kt - 1 - hi));
    }
    // O += P · V  [rows, hd]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, kt, 1.0f, S, kKeyTile, vt_rows, hd, 1.0f, o, hd);
  }
  // Keys a later query of the tile may read differently: per row, at the row's own position.
  for (int r = 0; r < rows; ++r) {
    const int p = pos0 + r / G;
    const float* q = qs + static_cast<int64_t>(r) * hd;
    float* orow = o + static_cast<int64_t>(r) * hd;
    float* sr = S + static_cast<int64_t>(r) * kKeyTile;
    for (int k0 = std::max(stable, FirstKey(s, p)); k0 <= p; k0 += kKeyTile) {
      const int kt = std::min(kKeyTile, p + 1 - k0);
      k.Dot(q, p, k0, k0 + kt, sr);
      FoldScores(sr, kt, m[r], l[r], orow, hd);
      v.WeightedSum(sr, p, k0, k0 + kt, orow);
    }
  }
  for (int r = 0; r < rows; ++r) {
    const float inv = 1.0f / l[r];
    float* orow = o + static_cast<int64_t>(r) * hd;
    for (int d = 0; d < hd; ++d) orow[d] *= inv;
  }
}

}  // namespace kvaudit
