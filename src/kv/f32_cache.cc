#include "kv/f32_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kv/attention/chunked_attention.h"
#include "kv/attention/f32_attention.h"
#include "ops/aligned_buffer.h"

namespace kvaudit {

namespace {

class F32Cache final : public KvCache {
 public:
  F32Cache(const ModelConfig& c, int max_pos)
      : n_layers_(c.n_layers), n_heads_(c.n_heads), n_kv_(c.n_kv_heads), hd_(c.head_dim), max_pos_(max_pos),
        len_(c.n_layers, 0), k_(c.n_layers), v_(c.n_layers), attn_(AttnShapeFor(c), c.n_heads, c.n_kv_heads) {
    KV_CHECK(max_pos > 0 && n_heads_ % n_kv_ == 0);
    shape_ = AttnShapeFor(c);
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
    const auto kernel = [&](int g, const float* qs, int n_tok, int p0, int k0, int k1, float* o, PartialRow* part,
                            float* scores) {
      AttendChunkGrouped(shape_, qs, n_tok, p0, K(layer, g), V(layer, g), k0, k1, o, part, scores);
    };
    const auto no_rotation = [](int) { return false; };
    attn_.Attend(pos0, n, q, out, pool, kernel, no_rotation, no_rotation);
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

  int n_layers_, n_heads_, n_kv_, hd_, max_pos_;
  AttnShape shape_;
  std::vector<int> len_;              // [n_layers] positions stored
  std::vector<AlignedBuffer> k_, v_;  // [n_layers] of [n_kv_heads, max_pos, head_dim]
  ChunkedAttention attn_;
};

}  // namespace

std::unique_ptr<KvCache> MakeF32Cache(const ModelConfig& config, int max_positions) {
  return std::make_unique<F32Cache>(config, max_positions);
}

}  // namespace kvaudit
