#include "kv/f32_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kv/attention/chunked_attention.h"
#include "kv/attention/f32_attention.h"
#include "kv/store/chunked_rows.h"
#include "kv/store/reservation.h"

namespace kvaudit {

namespace {

// A kernel call covers keys [c·kKeyChunk, (c+1)·kKeyChunk): it must lie inside one storage chunk.
static_assert(kCacheChunk % kKeyChunk == 0, "an attention key chunk must lie in one storage chunk");

class F32Cache final : public KvCache {
 public:
  F32Cache(const ModelConfig& c, int max_pos)
      : n_layers_(c.n_layers),
        n_heads_(c.n_heads),
        n_kv_(c.n_kv_heads),
        hd_(c.head_dim),
        max_pos_(max_pos),
        shapes_(c),
        len_(c.n_layers, 0),
        attn_(c.n_heads, c.n_kv_heads) {
    KV_CHECK(max_pos > 0 && n_heads_ % n_kv_ == 0);
    for (int i = 0; i < 2 * n_layers_ * n_kv_; ++i) rows_.emplace_back(sizeof(float) * hd_);
  }

  void Append(int layer, int pos0, int n, const float* k, const float* /*k_pre_rope*/, const float* v) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n >= 0);
    KV_CHECK_MSG(pos0 + n <= max_pos_, "KV cache full: raise max_positions");
    KV_CHECK_MSG(pos0 <= len_[layer], "KV cache positions must be appended without gaps");
    for (int g = 0; g < n_kv_; ++g) {
      ChunkedRows& kr = Rows(layer, g, 0);
      ChunkedRows& vr = Rows(layer, g, 1);
      kr.Grow(pos0 + n);
      vr.Grow(pos0 + n);
      for (int t = 0; t < n; ++t) {
        const int64_t src = (static_cast<int64_t>(t) * n_kv_ + g) * hd_;
        std::memcpy(kr.Row(pos0 + t), k + src, sizeof(float) * hd_);
        std::memcpy(vr.Row(pos0 + t), v + src, sizeof(float) * hd_);
      }
    }
    len_[layer] = pos0 + n;
  }

  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n > 0);
    KV_CHECK_MSG(pos0 + n <= len_[layer], "Attend before Append of the same positions");
    // Every call covers one key chunk [k0, k1) with k0 < the stored length: one storage chunk.
    const auto kernel = [&](int g, const float* qs, int n_tok, int p0, int k0, int k1, float* o, PartialRow* part,
                            float* scores) {
      AttendChunkGrouped(shapes_[layer], qs, n_tok, p0, RowsFrom(layer, g, 0, k0), RowsFrom(layer, g, 1, k0), k0, k1, o,
                         part, scores);
    };
    const auto no_rotation = [](int) { return false; };
    attn_.Attend(shapes_[layer], pos0, n, q, out, pool, kernel, no_rotation, no_rotation);
  }

  void Reset() override { std::fill(len_.begin(), len_.end(), 0); }

  Status Reserve(int n_pos) override {
    KV_CHECK(n_pos >= 0 && n_pos <= max_pos_);
    uint64_t total = 0;
    for (const ChunkedRows& r : rows_) total += r.BytesFor(n_pos);
    const std::string what = "k=f32,v=f32: " + std::to_string(n_layers_) + " layers × " + std::to_string(n_kv_) +
                             " KV heads × " + std::to_string(hd_) + " dims";
    return ReserveKvStorage(n_pos, total, bytes_reserved(), what, [&] {
      for (ChunkedRows& r : rows_) {
        if (!r.Reserve(n_pos)) return false;
      }
      return true;
    });
  }

  uint64_t bytes_per_token() const override {
    return static_cast<uint64_t>(n_layers_) * 2 * n_kv_ * hd_ * sizeof(float);
  }
  uint64_t bytes_used() const override {
    uint64_t b = 0;
    for (int l : len_) b += static_cast<uint64_t>(l) * 2 * n_kv_ * hd_ * sizeof(float);
    return b;
  }
  uint64_t bytes_reserved() const override {
    uint64_t b = 0;
    for (const ChunkedRows& r : rows_) b += r.bytes_reserved();
    return b;
  }

  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && g >= 0 && g < n_kv_ && 0 <= t0 && t0 <= t1 && t1 <= p + 1 &&
             p < len_[layer]);
    for (int t = t0; t < t1;) {  // one memcpy per chunk
      const int end = static_cast<int>(Rows(layer, g, 0).RunEnd(t, t1));
      const size_t bytes = sizeof(float) * static_cast<size_t>(end - t) * hd_;
      std::memcpy(k + static_cast<int64_t>(t - t0) * hd_, RowsFrom(layer, g, 0, t), bytes);
      std::memcpy(v + static_cast<int64_t>(t - t0) * hd_, RowsFrom(layer, g, 1, t), bytes);
      t = end;
    }
    return true;
  }

 private:
  // which: 0 = K, 1 = V.
  ChunkedRows& Rows(int layer, int g, int which) { return rows_[(static_cast<size_t>(layer) * n_kv_ + g) * 2 + which]; }
  const ChunkedRows& Rows(int layer, int g, int which) const {
    return rows_[(static_cast<size_t>(layer) * n_kv_ + g) * 2 + which];
  }
  // Rows [t, end of t's chunk) of K or V: [.., head_dim] contiguous.
  const float* RowsFrom(int layer, int g, int which, int t) const {
    return reinterpret_cast<const float*>(Rows(layer, g, which).Row(t));
  }

  int n_layers_, n_heads_, n_kv_, hd_, max_pos_;
  LayerAttnShapes shapes_;         // [n_layers]
  std::vector<int> len_;           // [n_layers] positions stored
  std::vector<ChunkedRows> rows_;  // [n_layers, n_kv_heads, K|V] of [positions, head_dim] f32 in chunks
  ChunkedAttention attn_;
};

}  // namespace

std::unique_ptr<KvCache> MakeF32Cache(const ModelConfig& config, int max_positions) {
  return std::make_unique<F32Cache>(config, max_positions);
}

}  // namespace kvaudit
