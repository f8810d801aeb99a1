#include "kv/quant_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "kv/attention/chunked_attention.h"
#include "kv/attention/f32_attention.h"
#include "ops/hadamard.h"
#include "kv/attention/quant_attention.h"
#include "kv/store/chunked_rows.h"
#include "kv/store/reservation.h"
#include "kv/store/row_store.h"
#include "model/forward.h"
#include "ops/aligned_buffer.h"
#include "ops/rope.h"

namespace kvaudit {

namespace {

static_assert(Forward::kMaxChunk <= kMaxAppendRows, "row stores keep a recent ring of W + kMaxAppendRows rows");
// A kernel call covers keys [c·kKeyChunk, (c+1)·kKeyChunk): it must lie inside one storage chunk.
static_assert(kCacheChunk % kKeyChunk == 0, "an attention key chunk must lie in one storage chunk");

struct HeadStores {
  std::unique_ptr<TensorStore> k, v;
  const F32RowsView* k_f32 = nullptr;  // non-null when both stores are exact f32 rows
  const F32RowsView* v_f32 = nullptr;
  bool rot_k = false, rot_v = false;      // rotate rows before storing them (rot=1)
  bool basis_k = false, basis_v = false;  // stored rows read back in the H/√d basis: rot=1, or a
                                          // format that rotates its rows itself (TurboQuant keys)
};

class QuantCache final : public KvCache {
 public:
  QuantCache(const ModelConfig& c, const CacheConfig& cache_config, const KvCalibration* calib, int max_pos,
             const StoreFactory& factory)
      : n_layers_(c.n_layers),
        n_heads_(c.n_heads),
        n_kv_(c.n_kv_heads),
        hd_(c.head_dim),
        max_pos_(max_pos),
        spec_(cache_config.spec()),
        shapes_(c),
        rope_params_(c.rope),
        heads_(static_cast<size_t>(c.n_layers) * c.n_kv_heads),
        attn_(c.n_heads, c.n_kv_heads) {
    KV_CHECK(max_pos > 0 && n_heads_ % n_kv_ == 0);
    KV_CHECK_MSG(cache_config.attention() == AttentionMode::kNative,
                 "engine=llama.cpp is not the native quantized cache");
    for (int l = 0; l < n_layers_; ++l) {
      for (int g = 0; g < n_kv_; ++g) pre_rope_ = pre_rope_ || cache_config.ForHead(c, l, g).pre_rope;
    }
    if (pre_rope_) rope_ = RopeTable(rope_params_, hd_, 1);  // grows with the positions (EnsureRope)
    for (int l = 0; l < n_layers_; ++l) {
      for (int g = 0; g < n_kv_; ++g) {
        StoreSpec spec;
        spec.layer = l;
        spec.kv_head = g;
        spec.head = cache_config.ForHead(c, l, g);
        spec.head_dim = hd_;
        spec.max_positions = max_pos;
        spec.calib = calib;
        spec.ckpt_scales = &c.kv_scales;
        spec.rope = &rope_;
        HeadStores& h = Head(l, g);
        spec.is_key = true;
        h.k = factory(spec);
        spec.is_key = false;
        h.v = factory(spec);
        KV_CHECK(h.k && h.v);
        const auto* kf = dynamic_cast<const F32RowsView*>(h.k.get());
        const auto* vf = dynamic_cast<const F32RowsView*>(h.v.get());
        if (kf && vf && kf->exact_f32() && vf->exact_f32()) {
          h.k_f32 = kf;
          h.v_f32 = vf;
        }
        const bool rot = spec.head.rot == RotationMode::kOn;
        h.rot_k = rot && !IsFullPrecision(spec.head.k) && !RowRotatesItself(spec.head.k);
        h.rot_v = rot && !IsFullPrecision(spec.head.v) && !RowRotatesItself(spec.head.v);
        h.basis_k = h.rot_k || RowRotatesItself(spec.head.k);
        h.basis_v = h.rot_v || RowRotatesItself(spec.head.v);
        KV_CHECK_MSG(!(h.basis_k || h.basis_v) || (hd_ & (hd_ - 1)) == 0, "rot=1 needs a power-of-two head_dim");
        KV_CHECK_MSG(!(RowRotatesItself(spec.head.k) && spec.head.pre_rope), "prerope=1 with a rotating format");
        KV_CHECK_MSG(!(h.rot_k && spec.head.pre_rope), "prerope=1 with rot=1 does not commute with RoPE");
      }
    }
  }

  void Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && pos0 >= 0 && n >= 0);
    KV_CHECK_MSG(pos0 + n <= max_pos_, "KV cache full: raise max_positions");
    const int64_t kvd = static_cast<int64_t>(n_kv_) * hd_;
    if (pre_rope_) EnsureRope(pos0 + n);
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
    // The f32 cache's driver and kernel for exact f32 rows, so `k=f32,v=f32` is bit-identical to it
    // (each call covers one key chunk [k0, k1), k0 below the stored length: one storage chunk).
    const auto kernel = [&](int g, const float* qs, int n_tok, int p0, int k0, int k1, float* o, PartialRow* part,
                            float* scores) {
      const HeadStores& h = Head(layer, g);
      if (h.k_f32) {
        AttendChunkGrouped(shapes_[layer], qs, n_tok, p0, h.k_f32->f32_rows_from(k0), h.v_f32->f32_rows_from(k0), k0,
                           k1, o, part, scores);
      } else {
        AttendChunkStores(shapes_[layer], qs, n_tok, p0, *h.k, *h.v, k0, k1, o, part, scores);
      }
    };
    attn_.Attend(
        shapes_[layer], pos0, n, q, out, pool, kernel, [&](int g) { return Head(layer, g).basis_k; },
        [&](int g) { return Head(layer, g).basis_v; });
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
  uint64_t bytes_reserved() const override {
    uint64_t total = RopeBytes(rope_.max_pos());
    for (const HeadStores& h : heads_) total += h.k->bytes_reserved() + h.v->bytes_reserved();
    return total;
  }

  Status Reserve(int n_pos) override {
    KV_CHECK(n_pos >= 0 && n_pos <= max_pos_);
    uint64_t total = RopeBytes(std::max(RopePositionsFor(n_pos), rope_.max_pos()));
    for (const HeadStores& h : heads_) total += h.k->StorageFor(n_pos) + h.v->StorageFor(n_pos);
    const std::string what =
        spec_ + ": " + std::to_string(n_layers_) + " layers × " + std::to_string(n_kv_) + " KV heads";
    return ReserveKvStorage(n_pos, total, bytes_reserved(), what, [&] {
      for (HeadStores& h : heads_) {
        if (!h.k->Reserve(n_pos) || !h.v->Reserve(n_pos)) return false;
      }
      if (!pre_rope_) return true;
      // The RoPE table is a std::vector: its bad_alloc is caught here, the one allocation of this
      // cache that reports failure by exception, so that it comes back as Reserve's error.
      try {
        EnsureRope(n_pos);
      } catch (const std::bad_alloc&) {
        return false;
      }
      return true;
    });
  }
  bool ReadRows(int layer, int g, int p, int t0, int t1, float* k, float* v) const override {
    KV_CHECK(layer >= 0 && layer < n_layers_ && g >= 0 && g < n_kv_ && 0 <= t0 && t0 <= t1 && t1 <= p + 1);
    const HeadStores& h = heads_[static_cast<size_t>(layer) * n_kv_ + g];
    KV_CHECK(p < std::min(h.k->size(), h.v->size()));
    if (t1 == t0) return true;
    h.k->Materialize(p, t0, t1, k);  // pre-RoPE key stores re-rope here
    h.v->Materialize(p, t0, t1, v);
    if (h.basis_k) HadamardRows(k, t1 - t0, hd_, hd_);  // H is its own inverse
    if (h.basis_v) HadamardRows(v, t1 - t0, hd_, hd_);
    return true;
  }

 private:
  HeadStores& Head(int layer, int g) { return heads_[static_cast<size_t>(layer) * n_kv_ + g]; }

  // Pre-RoPE key stores re-rope positions < rope_.max_pos(): extended to n positions in whole
  // chunks, like the stores' rows (row t's values do not depend on the table's size).
  void EnsureRope(int n) {
    if (rope_.max_pos() < n) rope_.Extend(RopePositionsFor(n));
  }
  int RopePositionsFor(int n) const {
    const int64_t chunked = (static_cast<int64_t>(n) + kCacheChunk - 1) / kCacheChunk * kCacheChunk;
    return static_cast<int>(std::min<int64_t>(chunked, max_pos_));
  }
  uint64_t RopeBytes(int n_pos) const { return pre_rope_ ? static_cast<uint64_t>(n_pos) * hd_ * sizeof(float) : 0; }

  // Copies n rows of one KV head (row stride `stride`) into rot_ and rotates them: [n, hd].
  const float* Rotated(const float* src, int n, int64_t stride) {
    if (rot_.size() < static_cast<int64_t>(n) * hd_) rot_.Resize(static_cast<int64_t>(n) * hd_);
    for (int t = 0; t < n; ++t)
      std::memcpy(rot_.data() + static_cast<int64_t>(t) * hd_, src + t * stride, sizeof(float) * hd_);
    HadamardRows(rot_.data(), n, hd_, hd_);
    return rot_.data();
  }

  int n_layers_, n_heads_, n_kv_, hd_, max_pos_;
  std::string spec_;        // the configuration's canonical spec, for Reserve's error
  LayerAttnShapes shapes_;  // [n_layers]
  bool pre_rope_ = false;   // some key store is pre-RoPE (prerope=1)
  RopeParams rope_params_;
  RopeTable rope_;                 // [positions, head_dim/2] cos and sin for pre-RoPE key stores
  std::vector<HeadStores> heads_;  // [n_layers, n_kv_heads]
  AlignedBuffer rot_;              // [n, hd] rotated rows of one head during Append
  ChunkedAttention attn_;
};

}  // namespace

std::unique_ptr<KvCache> MakeQuantCache(const ModelConfig& config, const CacheConfig& cache_config,
                                        const KvCalibration* calib, int max_positions, const StoreFactory& factory) {
  return std::make_unique<QuantCache>(config, cache_config, calib, max_positions, factory);
}

}  // namespace kvaudit
