#include "kv/quant_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kv/f32_attention.h"
#include "kv/hadamard.h"
#include "kv/quant_attention.h"
#include "kv/row_store.h"
#include "model/forward.h"
#include "ops/aligned_buffer.h"
#include "ops/matmul.h"
#include "ops/rope.h"

namespace kvaudit {

namespace {

static_assert(Forward::kMaxChunk <= kMaxAppendRows, "row stores keep a recent ring of W + kMaxAppendRows rows");

// The f32 cache's split (kv/f32_cache.cc), kept identical so `k=f32,v=f32` is bit-identical to it.
constexpr int kDecodeMaxTokens = 4;
constexpr int kKeyChunk = 256;  // keys per decode work item
constexpr int kQueryTile = 64;  // query tokens per prefill work item

struct HeadStores {
  std::unique_ptr<TensorStore> k, v;
  const float* k_f32 = nullptr;  // non-null when both stores are exact f32 rows (F32RowsView)
  const float* v_f32 = nullptr;
  bool rot_k = false, rot_v = false;
};

class QuantCache final : public KvCache {
 public:
  QuantCache(const ModelConfig& c, const CachePolicy& policy, const KvCalibration* calib, int max_pos,
             const StoreFactory& factory)
      : n_layers_(c.n_layers), n_heads_(c.n_heads), n_kv_(c.n_kv_heads), hd_(c.head_dim), max_pos_(max_pos),
        heads_(static_cast<size_t>(c.n_layers) * c.n_kv_heads) {
    KV_CHECK(max_pos > 0 && n_heads_ % n_kv_ == 0);
    KV_CHECK_MSG(policy.engine() == AttentionEngine::kNative, "engine=llama.cpp is not the native quantized cache");
    // The prefill kernels call sgemm from our pool's threads: a multi-threaded OpenBLAS would pick
    // its split by what else is running and make results depend on timing.
    InitBlasSingleThreaded();
    shape_.head_dim = hd_;
    shape_.group = n_heads_ / n_kv_;
    shape_.window = c.sliding_window;
    shape_.scale = 1.0f / std::sqrt(static_cast<float>(hd_));
    rope_ = RopeTable(c.rope, hd_, max_pos);
    for (int l = 0; l < n_layers_; ++l) {
      for (int g = 0; g < n_kv_; ++g) {
        StoreSpec spec;
        spec.layer = l;
        spec.kv_head = g;
        spec.policy = policy.ForHead(l, g);
        spec.head_dim = hd_;
        spec.max_positions = max_pos;
        spec.calib = calib;
        spec.rope = &rope_;
        HeadStores& h = Head(l, g);
        spec.is_key = true;
        h.k = factory(spec);
        spec.is_key = false;
        h.v = factory(spec);
        KV_CHECK(h.k && h.v);
        const auto* kf = dynamic_cast<const F32RowsView*>(h.k.get());
        const auto* vf = dynamic_cast<const F32RowsView*>(h.v.get());
        if (kf && vf && kf->f32_rows() && vf->f32_rows()) {
          h.k_f32 = kf->f32_rows();
          h.v_f32 = vf->f32_rows();
        }
        const bool rot = spec.policy.rot == RotationMode::kOn;
        h.rot_k = rot && !IsFullPrecision(spec.policy.k);
        h.rot_v = rot && !IsFullPrecision(spec.policy.v);
        KV_CHECK_MSG(!(h.rot_k || h.rot_v) || (hd_ & (hd_ - 1)) == 0, "rot=1 needs a power-of-two head_dim");
        KV_CHECK_MSG(!(h.rot_k && spec.policy.pre_rope), "prerope=1 with rot=1 does not commute with RoPE");
      }
    }
  }

  void Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n >= 0);
    KV_CHECK_MSG(pos0 + n <= max_pos_, "KV cache full: raise max_positions");
    const int64_t kvd = static_cast<int64_t>(n_kv_) * hd_;
    for (int g = 0; g < n_kv_; ++g) {
      HeadStores& h = Head(layer, g);
      KV_CHECK_MSG(pos0 <= h.k->size(), "KV cache positions must be appended without gaps");
      const float* pre = k_pre_rope ? k_pre_rope + g * hd_ : nullptr;
      if (h.rot_k) {
        h.k->Append(pos0, n, Rotated(k + g * hd_, n, kvd), hd_, pre, kvd);
      } else {
        h.k->Append(pos0, n, k + g * hd_, kvd, pre, kvd);
      }
      if (h.rot_v) {
        h.v->Append(pos0, n, Rotated(v + g * hd_, n, kvd), hd_, nullptr, 0);
      } else {
        h.v->Append(pos0, n, v + g * hd_, kvd, nullptr, 0);
      }
    }
  }

  void Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n > 0);
    for (int g = 0; g < n_kv_; ++g) {
      KV_CHECK_MSG(pos0 + n <= std::min(Head(layer, g).k->size(), Head(layer, g).v->size()),
                   "Attend before Append of the same positions");
    }
    if (n <= kDecodeMaxTokens) {
      AttendDecode(layer, pos0, n, q, out, pool);
    } else {
      AttendPrefill(layer, pos0, n, q, out, pool);
    }
  }

  void Reset() override {
    for (HeadStores& h : heads_) {
      h.k->Reset();
      h.v->Reset();
    }
  }

  uint64_t bytes_per_token() const override {
    uint64_t total = 0;
    for (const HeadStores& h : heads_) total += h.k->BytesFor(max_pos_) + h.v->BytesFor(max_pos_);
    return (total + max_pos_ - 1) / max_pos_;
  }
  uint64_t bytes_used() const override {
    uint64_t total = 0;
    for (const HeadStores& h : heads_) total += h.k->BytesFor(h.k->size()) + h.v->BytesFor(h.v->size());
    return total;
  }
  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && g >= 0 && g < n_kv_ && 0 <= t0 && t0 <= t1 && t1 <= p + 1);
    const HeadStores& h = heads_[static_cast<size_t>(layer) * n_kv_ + g];
    KV_CHECK(p < std::min(h.k->size(), h.v->size()));
    if (t1 == t0) return true;
    h.k->Materialize(p, t0, t1, k);  // pre-RoPE key stores re-rope here
    h.v->Materialize(p, t0, t1, v);
    if (h.rot_k) HadamardRows(k, t1 - t0, hd_, hd_);  // H is its own inverse
    if (h.rot_v) HadamardRows(v, t1 - t0, hd_, hd_);
    return true;
  }

 private:
  HeadStores& Head(int layer, int g) { return heads_[static_cast<size_t>(layer) * n_kv_ + g]; }

  // Copies n rows of one KV head (row stride `stride`) into rot_ and rotates them: [n, hd].
  const float* Rotated(const float* src, int n, int64_t stride) {
    if (rot_.size() < static_cast<int64_t>(n) * hd_) rot_.Resize(static_cast<int64_t>(n) * hd_);
    for (int t = 0; t < n; ++t) std::memcpy(rot_.data() + static_cast<int64_t>(t) * hd_, src + t * stride, sizeof(float) * hd_);
    HadamardRows(rot_.data(), n, hd_, hd_);
    return rot_.data();
  }

  // Rows of KV group g for tokens [t0, t0+nt) into qs [nt*G, hd]: rotated like the keys, then
  // scaled by 1/sqrt(hd) (F32Cache's convention, so the f32 path is bit-identical).
  void GatherQ(const float* q, const HeadStores& h, int g, int t0, int nt, float* qs) const {
    const int G = shape_.group;
    for (int t = 0; t < nt; ++t) {
      for (int j = 0; j < G; ++j) {
        const float* src = q + ((static_cast<int64_t>(t0 + t) * n_heads_) + g * G + j) * hd_;
        float* dst = qs + (static_cast<int64_t>(t) * G + j) * hd_;
        if (h.rot_k) {
          std::memcpy(dst, src, sizeof(float) * hd_);
          HadamardRows(dst, 1, hd_, hd_);
          for (int d = 0; d < hd_; ++d) dst[d] *= shape_.scale;
        } else {
          for (int d = 0; d < hd_; ++d) dst[d] = src[d] * shape_.scale;
        }
      }
    }
  }
  // o [nt*G, hd] (rotated back in place when V is rotated) into out [n, n_heads, hd].
  void ScatterO(float* o, const HeadStores& h, int g, int t0, int nt, float* out) const {
    const int G = shape_.group;
    if (h.rot_v) HadamardRows(o, static_cast<int64_t>(nt) * G, hd_, hd_);
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
    const int64_t per_thread =
        2 * rows * hd_ + std::max(TileScratchFloats(kQueryTile, shape_), StoreTileScratchFloats(kQueryTile, shape_));
    EnsureScratch(pool.size(), per_thread);
    pool.ForEachItem(n_kv_ * n_qt, [&](int item, int thread) {
      // Latest (most expensive, causal) query tiles first, for balance.
      const int qt = n_qt - 1 - item / n_kv_, g = item % n_kv_;
      const int t0 = qt * kQueryTile, nt = std::min(kQueryTile, n - t0);
      const HeadStores& h = Head(layer, g);
      float* qs = scratch_[thread].data();  // [nt*G, hd]
      float* o = qs + rows * hd_;           // [nt*G, hd]
      GatherQ(q, h, g, t0, nt, qs);
      if (h.k_f32) {
        AttendTile(shape_, qs, nt, pos0 + t0, h.k_f32, h.v_f32, o, o + rows * hd_);
      } else {
        AttendTileStores(shape_, qs, nt, pos0 + t0, *h.k, *h.v, o, o + rows * hd_);
      }
      ScatterO(o, h, g, t0, nt, out);
    });
  }

  void AttendDecode(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) {
    const int G = shape_.group, rows = n * G;
    const int c_begin = FirstKey(shape_, pos0) / kKeyChunk, c_end = (pos0 + n - 1) / kKeyChunk + 1;
    const int n_chunks = c_end - c_begin, n_items = n_kv_ * n_chunks;
    dq_.resize(static_cast<size_t>(n_kv_) * rows * hd_);         // [n_kv, rows, hd] scaled queries
    dpart_o_.resize(static_cast<size_t>(n_items) * rows * hd_);  // [n_kv, n_chunks, rows, hd]
    dpart_.resize(static_cast<size_t>(n_items) * rows);          // [n_kv, n_chunks, rows]
    for (int g = 0; g < n_kv_; ++g) GatherQ(q, Head(layer, g), g, 0, n, dq_.data() + static_cast<int64_t>(g) * rows * hd_);
    EnsureScratch(pool.size(), static_cast<int64_t>(G) * kKeyChunk);
    pool.ForEachItem(n_items, [&](int item, int thread) {
      const int g = item / n_chunks, c = c_begin + item % n_chunks;
      const HeadStores& h = Head(layer, g);
      const float* qs = dq_.data() + static_cast<int64_t>(g) * rows * hd_;
      float* o = dpart_o_.data() + static_cast<int64_t>(item) * rows * hd_;
      PartialRow* part = dpart_.data() + static_cast<int64_t>(item) * rows;
      if (h.k_f32) {
        AttendChunkGrouped(shape_, qs, n, pos0, h.k_f32, h.v_f32, c * kKeyChunk, (c + 1) * kKeyChunk, o, part,
                           scratch_[thread].data());
      } else {
        AttendChunkStores(shape_, qs, n, pos0, *h.k, *h.v, c * kKeyChunk, (c + 1) * kKeyChunk, o, part,
                          scratch_[thread].data());
      }
    });
    // Merge the chunks in order: o = Σ_c o_c·e^(m_c−M) / Σ_c l_c·e^(m_c−M).
    std::vector<float> acc(static_cast<size_t>(rows) * hd_);  // [rows, hd] one KV head's outputs
    for (int g = 0; g < n_kv_; ++g) {
      for (int r = 0; r < rows; ++r) {
        float M = -std::numeric_limits<float>::infinity();
        for (int c = 0; c < n_chunks; ++c) M = std::max(M, dpart_[(static_cast<size_t>(g) * n_chunks + c) * rows + r].m);
        float* a = acc.data() + static_cast<size_t>(r) * hd_;
        std::fill(a, a + hd_, 0.0f);
        float L = 0;
        for (int c = 0; c < n_chunks; ++c) {
          const size_t item = static_cast<size_t>(g) * n_chunks + c;
          const PartialRow pr = dpart_[item * rows + r];
          if (pr.l == 0) continue;
          const float w = std::exp(pr.m - M);
          L += pr.l * w;
          const float* oc = dpart_o_.data() + (item * rows + r) * hd_;
          for (int d = 0; d < hd_; ++d) a[d] += oc[d] * w;
        }
        for (int d = 0; d < hd_; ++d) a[d] = a[d] / L;
      }
      ScatterO(acc.data(), Head(layer, g), g, 0, n, out);
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
  RopeTable rope_;                 // [max_pos] for pre-RoPE key stores
  std::vector<HeadStores> heads_;  // [n_layers, n_kv_heads]
  AlignedBuffer rot_;              // [n, hd] rotated rows of one head during Append
  std::vector<AlignedBuffer> scratch_;  // [threads] kernel scratch
  std::vector<float> dq_, dpart_o_;
  std::vector<PartialRow> dpart_;
};

}  // namespace

std::unique_ptr<KvCache> MakeQuantCache(const ModelConfig& config, const CachePolicy& policy,
                                        const KvCalibration* calib, int max_positions, const StoreFactory& factory) {
  return std::make_unique<QuantCache>(config, policy, calib, max_positions, factory);
}

}  // namespace kvaudit
