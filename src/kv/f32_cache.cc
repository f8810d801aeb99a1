#include "kv/f32_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kv/f32_attention.h"
#include "ops/aligned_buffer.h"

namespace kvaudit {

namespace {

// Up to this many query tokens, attention splits the keys into chunks (flash-decoding) so even a
// single token keeps every thread busy; above it, queries are tiled and each tile runs AttendTile.
constexpr int kDecodeMaxTokens = 4;
constexpr int kKeyChunk = 256;    // keys per decode work item
constexpr int kQueryTile = 64;    // query tokens per prefill work item (x G rows per sgemm)

class F32Cache final : public KvCache {
 public:
  F32Cache(const ModelConfig& c, int max_pos)
      : n_layers_(c.n_layers), n_heads_(c.n_heads), n_kv_(c.n_kv_heads), hd_(c.head_dim), max_pos_(max_pos),
        len_(c.n_layers, 0), k_(c.n_layers), v_(c.n_layers) {
    KV_CHECK(max_pos > 0 && n_heads_ % n_kv_ == 0);
    shape_.head_dim = hd_;
    shape_.group = n_heads_ / n_kv_;
    shape_.window = c.sliding_window;
    shape_.scale = 1.0f / std::sqrt(static_cast<float>(hd_));
    for (int l = 0; l < n_layers_; ++l) {
      k_[l].Resize(static_cast<int64_t>(n_kv_) * max_pos_ * hd_);
      v_[l].Resize(static_cast<int64_t>(n_kv_) * max_pos_ * hd_);
    }
  }

  void Append(int layer, int pos0, int n, const float* k, const float* /*k_pre_rope*/, const float* v) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n >= 0);
    KV_CHECK_MSG(pos0 + n <= max_pos_, "KV cache full: raise max_positions");
    KV_CHECK_MSG(pos0 <= len_[layer], "KV cache positions must be appended without gaps");
    for (int t = 0; t < n; ++t) {
      for (int g = 0; g < n_kv_; ++g) {
        const int64_t src = (static_cast<int64_t>(t) * n_kv_ + g) * hd_;
        const int64_t dst = (static_cast<int64_t>(g) * max_pos_ + pos0 + t) * hd_;
        std::memcpy(k_[layer].data() + dst, k + src, sizeof(float) * hd_);
        std::memcpy(v_[layer].data() + dst, v + src, sizeof(float) * hd_);
      }
    }
    len_[layer] = pos0 + n;
  }

  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n > 0);
    KV_CHECK_MSG(pos0 + n <= len_[layer], "Attend before Append of the same positions");
    if (n <= kDecodeMaxTokens) {
      AttendDecode(layer, pos0, n, q, out, pool);
    } else {
      AttendPrefill(layer, pos0, n, q, out, pool);
    }
  }

  void Reset() override { std::fill(len_.begin(), len_.end(), 0); }
  uint64_t bytes_per_token() const override { return static_cast<uint64_t>(n_layers_) * 2 * n_kv_ * hd_ * sizeof(float); }
  uint64_t bytes_used() const override {
    uint64_t b = 0;
    for (int l : len_) b += static_cast<uint64_t>(l) * 2 * n_kv_ * hd_ * sizeof(float);
    return b;
  }
  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && g >= 0 && g < n_kv_ && 0 <= t0 && t0 <= t1 && t1 <= p + 1 &&
             p < len_[layer]);
    const size_t bytes = sizeof(float) * static_cast<size_t>(t1 - t0) * hd_;
    std::memcpy(k, K(layer, g) + static_cast<int64_t>(t0) * hd_, bytes);
    std::memcpy(v, V(layer, g) + static_cast<int64_t>(t0) * hd_, bytes);
    return true;
  }

 private:
  const float* K(int layer, int g) const { return k_[layer].data() + static_cast<int64_t>(g) * max_pos_ * hd_; }
  const float* V(int layer, int g) const { return v_[layer].data() + static_cast<int64_t>(g) * max_pos_ * hd_; }

  // Copies the rows of KV group g for tokens [t0, t0+nt) into qs [nt*G, hd], scaled by 1/sqrt(hd)
  // (transformers multiplies QKᵀ by `scaling`; scaling q first differs by rounding only).
  void GatherQ(const float* q, int g, int t0, int nt, float* qs) const {
    const int G = shape_.group;
    for (int t = 0; t < nt; ++t) {
      for (int j = 0; j < G; ++j) {
        const float* src = q + ((static_cast<int64_t>(t0 + t) * n_heads_) + g * G + j) * hd_;
        float* dst = qs + (static_cast<int64_t>(t) * G + j) * hd_;
        for (int d = 0; d < hd_; ++d) dst[d] = src[d] * shape_.scale;
      }
    }
  }
  void ScatterO(const float* o, int g, int t0, int nt, float* out) const {
    const int G = shape_.group;
    for (int t = 0; t < nt; ++t) {
      for (int j = 0; j < G; ++j) {
        std::memcpy(out + ((static_cast<int64_t>(t0 + t) * n_heads_) + g * G + j) * hd_,
                    o + (static_cast<int64_t>(t) * G + j) * hd_, sizeof(float) * hd_);
      }
    }
  }

  void AttendPrefill(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) {
    const int G = shape_.group, n_qt = (n + kQueryTile - 1) / kQueryTile;
    const int64_t rows = static_cast<int64_t>(kQueryTile) * G;
    const int64_t per_thread = 2 * rows * hd_ + TileScratchFloats(kQueryTile, shape_);
    EnsureScratch(pool.size(), per_thread);
    pool.ForEachItem(n_kv_ * n_qt, [&](int item, int thread) {
      // Latest (most expensive, causal) query tiles first, for balance.
      const int qt = n_qt - 1 - item / n_kv_, g = item % n_kv_;
      const int t0 = qt * kQueryTile, nt = std::min(kQueryTile, n - t0);
      float* qs = scratch_[thread].data();  // [nt*G, hd]
      float* o = qs + rows * hd_;           // [nt*G, hd]
      GatherQ(q, g, t0, nt, qs);
      AttendTile(shape_, qs, nt, pos0 + t0, K(layer, g), V(layer, g), o, o + rows * hd_);
      ScatterO(o, g, t0, nt, out);
    });
  }

  void AttendDecode(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) {
    const int G = shape_.group, rows = n * G;
    const int c_begin = FirstKey(shape_, pos0) / kKeyChunk, c_end = (pos0 + n - 1) / kKeyChunk + 1;
    const int n_chunks = c_end - c_begin, n_items = n_kv_ * n_chunks;
    dq_.resize(static_cast<size_t>(n_kv_) * rows * hd_);            // [n_kv, rows, hd] scaled queries
    dpart_o_.resize(static_cast<size_t>(n_items) * rows * hd_);     // [n_kv, n_chunks, rows, hd]
    dpart_.resize(static_cast<size_t>(n_items) * rows);             // [n_kv, n_chunks, rows]
    for (int g = 0; g < n_kv_; ++g) GatherQ(q, g, 0, n, dq_.data() + static_cast<int64_t>(g) * rows * hd_);
    EnsureScratch(pool.size(), static_cast<int64_t>(G) * kKeyChunk);
    pool.ForEachItem(n_items, [&](int item, int thread) {
      const int g = item / n_chunks, c = c_begin + item % n_chunks;
      AttendChunkGrouped(shape_, dq_.data() + static_cast<int64_t>(g) * rows * hd_, n, pos0, K(layer, g), V(layer, g),
                  c * kKeyChunk, (c + 1) * kKeyChunk, dpart_o_.data() + static_cast<int64_t>(item) * rows * hd_,
                  dpart_.data() + static_cast<int64_t>(item) * rows, scratch_[thread].data());
    });
    // Merge the chunks in order: o = Σ_c o_c·e^(m_c−M) / Σ_c l_c·e^(m_c−M).
    std::vector<float> acc(hd_);
    for (int g = 0; g < n_kv_; ++g) {
      for (int r = 0; r < rows; ++r) {
        float M = -std::numeric_limits<float>::infinity();
        for (int c = 0; c < n_chunks; ++c) M = std::max(M, dpart_[(static_cast<size_t>(g) * n_chunks + c) * rows + r].m);
        std::fill(acc.begin(), acc.end(), 0.0f);
        float L = 0;
        for (int c = 0; c < n_chunks; ++c) {
          const size_t item = static_cast<size_t>(g) * n_chunks + c;
          const PartialRow pr = dpart_[item * rows + r];
          if (pr.l == 0) continue;
          const float w = std::exp(pr.m - M);
          L += pr.l * w;
          const float* oc = dpart_o_.data() + (item * rows + r) * hd_;
          for (int d = 0; d < hd_; ++d) acc[d] += oc[d] * w;
        }
        const int t = r / G, j = r % G;
        float* dst = out + ((static_cast<int64_t>(t) * n_heads_) + g * G + j) * hd_;
        for (int d = 0; d < hd_; ++d) dst[d] = acc[d] / L;
      }
    }
  }

  void EnsureScratch(int n_threads, int64_t floats) {
    if (static_cast<int>(scratch_.size()) < n_threads) scratch_.resize(n_threads);
    for (AlignedBuffer& b : scratch_) {
      if (b.size() < floats) b.Resize(floats);
    }
  }

  int n_layers_, n_heads_, n_kv_, hd_, max_pos_;
  AttnShape shape_;
  std::vector<int> len_;              // [n_layers] positions stored
  std::vector<AlignedBuffer> k_, v_;  // [n_layers] of [n_kv_heads, max_pos, head_dim]
  std::vector<AlignedBuffer> scratch_;  // [threads] kernel scratch
  std::vector<float> dq_, dpart_o_;
  std::vector<PartialRow> dpart_;
};

}  // namespace

std::unique_ptr<KvCache> MakeF32Cache(const ModelConfig& config, int max_positions) {
  return std::make_unique<F32Cache>(config, max_positions);
}

}  // namespace kvaudit
