#include "kv/store/row_store.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kv/formats/float_codecs.h"
#include "kv/formats/format_table.h"
#include "kv/store/chunked_rows.h"
#include "ops/aligned_buffer.h"

namespace kvaudit {

const RowCodec& RowCodecFor(const StoreSpec& spec) {
  const RowCodec* codec = CodecFor(spec.format(), spec.head.scale == Fp8ScaleMode::kDynamic);
  KV_CHECK_MSG(codec != nullptr, "not a row-codec format (KIVI groups keys along tokens: kv/store/kivi_store.h)");
  return *codec;
}

CodecParams RowCodecParamsFor(const StoreSpec& spec) {
  CodecParams p;
  p.group = spec.head.IntGroup();
  const KvFormat f = spec.format();
  if (HasTensorScale(f) && spec.head.scale == Fp8ScaleMode::kCalib) {
    KV_CHECK_MSG(spec.calib != nullptr, "scale=calib needs a calibration (--kv-calib)");
    const KvCalibration& c = *spec.calib;
    const bool by_head = spec.head.scale_by == Fp8ScaleBy::kHead;
    float amax = 0;
    if (spec.is_key && spec.head.pre_rope) {
      // The packed rows are pre-RoPE keys, so the scale comes from their amax.
      for (int h = 0; h < c.n_kv_heads; ++h) {
        if (by_head && h != spec.kv_head) continue;
        const float* ch =
            c.k_pre_rope_channel_amax.data() + (static_cast<size_t>(spec.layer) * c.n_kv_heads + h) * c.head_dim;
        amax = std::max(amax, *std::max_element(ch, ch + c.head_dim));
      }
    } else if (spec.is_key) {
      amax = by_head ? c.KAmax(spec.layer, spec.kv_head) : c.KLayerAmax(spec.layer);
    } else {
      amax = by_head ? c.VAmax(spec.layer, spec.kv_head) : c.VLayerAmax(spec.layer);
    }
    p.scale = Format(f).calib_scale(amax);
  }
  if (HasTensorScale(f) && spec.head.scale == Fp8ScaleMode::kCkpt) {
    KV_CHECK_MSG(spec.ckpt_scales != nullptr && !spec.ckpt_scales->empty(), "scale=ckpt needs the checkpoint's scales");
    const CheckpointKvScales& s = *spec.ckpt_scales;
    p.scale = spec.is_key ? s.K(spec.layer, spec.kv_head) : s.V(spec.layer, spec.kv_head);
  }
  return p;
}

namespace {

class RowStore final : public TensorStore, public F32RowsView {
 public:
  explicit RowStore(const StoreSpec& spec)
      : codec_(RowCodecFor(spec)),
        params_(RowCodecParamsFor(spec)),
        f32_(F32Codec()),
        hd_(spec.head_dim),
        max_pos_(spec.max_positions),
        row_bytes_(codec_.row_bytes(spec.head_dim, params_)) {
    KV_CHECK(hd_ > 0 && hd_ <= kMaxRowStoreHeadDim && max_pos_ > 0);
    const int block = codec_.block_elems > 0 ? codec_.block_elems : params_.group;
    KV_CHECK_MSG(block > 0 && hd_ % block == 0, "the format's block/group size must divide head_dim");
    const KvFormat f = spec.format();
    const HeadConfig& pol = spec.head;
    plain_f32_ = f == KvFormat::kF32;
    if (!IsFullPrecision(f)) {  // modifiers apply to quantized formats only (kv/formats/format_table.h)
      sink_ = std::min(pol.sink, max_pos_);
      recent_ = pol.Recent();
      if (spec.is_key && pol.outliers > 0) {
        KV_CHECK_MSG(spec.calib != nullptr, "outliers= needs a calibration (--kv-calib)");
        channels_ = spec.calib->TopKeyChannels(spec.layer, spec.kv_head, pol.outliers, pol.pre_rope);
      }
      if (spec.is_key && pol.pre_rope) {
        // The cache grows the table with its positions (RopeTable::Apply checks the position).
        KV_CHECK_MSG(spec.rope != nullptr && spec.rope->head_dim() == hd_, "pre-RoPE keys need a RoPE table");
        rope_ = spec.rope;
      }
      // fp8/nvfp4 unit/calib: one f32 scale per layer or per head (vLLM's k_scale/v_scale); a
      // per-layer scale is counted once, in the store of KV head 0.
      if (HasTensorScale(f) && pol.scale != Fp8ScaleMode::kDynamic &&
          (pol.scale_by == Fp8ScaleBy::kHead || spec.kv_head == 0)) {
        fixed_bytes_ += sizeof(float);
      }
      fixed_bytes_ += channels_.size() * sizeof(int32_t);  // the channel index list
    }
    packed_ = ChunkedRows(row_bytes_);                              // [positions, row_bytes] bytes
    outlier_vals_ = ChunkedRows(channels_.size() * sizeof(float));  // [positions, n_outliers] f32
    sink_rows_.Resize(static_cast<int64_t>(sink_) * hd_);  // [sink, hd]: bounded by the configuration, held up front
    ring_cap_ = recent_ > 0 ? std::min(max_pos_, recent_ + kMaxAppendRows) : 0;
    ring_ = ChunkedRows(ring_cap_ > 0 ? sizeof(float) * hd_ : 0);  // [ring_cap, hd], row t at slot t % ring_cap
  }

  bool exact_f32() const override { return plain_f32_; }
  const float* f32_rows_from(int t) const override {
    KV_CHECK(plain_f32_);
    return reinterpret_cast<const float*>(packed_.Row(t));
  }

  void Append(int pos0, int n, const float* rows, int64_t stride, const float* pre_rope, int64_t pre_stride) override {
    KV_CHECK(pos0 >= 0 && n >= 0 && pos0 <= size_);
    KV_CHECK_MSG(pos0 + n <= max_pos_, "KV cache full: raise max_positions");
    KV_CHECK_MSG(recent_ == 0 || n <= kMaxAppendRows, "append at most kMaxAppendRows rows per call with recent=");
    KV_CHECK_MSG(rope_ == nullptr || pre_rope != nullptr, "pre-RoPE keys need the pre-RoPE rows");
    float tmp[kMaxRowStoreHeadDim];  // [hd] the row as packed
    const int n_out = static_cast<int>(channels_.size());
    packed_.Grow(pos0 + n);
    outlier_vals_.Grow(pos0 + n);
    ring_.Grow(std::min(ring_cap_, pos0 + n));  // slots are used in order: the first ring_cap_ positions fill them
    for (int i = 0; i < n; ++i) {
      const int t = pos0 + i;
      const float* x = rows + i * stride;
      std::memcpy(tmp, rope_ ? pre_rope + i * pre_stride : x, sizeof(float) * hd_);
      for (int j = 0; j < n_out; ++j) {
        OutlierVals(t)[j] = tmp[channels_[j]];
        tmp[channels_[j]] = 0.0f;  // so the channel does not set its block's scale
      }
      codec_.quantize(tmp, Packed(t), hd_, params_);
      if (t < sink_) std::memcpy(sink_rows_.data() + static_cast<int64_t>(t) * hd_, x, sizeof(float) * hd_);
      if (ring_cap_ > 0) std::memcpy(Ring(t), x, sizeof(float) * hd_);
    }
    size_ = pos0 + n;
  }

  void Reset() override { size_ = 0; }
  int size() const override { return size_; }

  int StableEnd(int p) const override {
    // Without a window every row is read the same way by every query; with one, row t is packed
    // for query p iff t <= p − W (or exact forever if t < S), and so for every later query too.
    if (recent_ == 0) return max_pos_;
    return std::max({0, sink_, p - recent_ + 1});
  }

  void Materialize(int p, int t0, int t1, float* out) const override {
    CheckRange(p, t0, t1);
    for (int t = t0; t < t1; ++t) {
      float* y = out + static_cast<int64_t>(t - t0) * hd_;
      if (const float* e = Exact(p, t))
        std::memcpy(y, e, sizeof(float) * hd_);
      else
        Dequant(t, y);
    }
  }

  void Dot(const float* q, int p, int t0, int t1, float* out) const override { DotMulti(q, 0, 1, p, t0, t1, out, 0); }

  // Exact rows one by one; each run of packed rows through the codec's dot_rows (every block
  // decoded once for all n_q queries), bit-identical to its per-row dot.
  void DotMulti(const float* q, int64_t q_stride, int n_q, int p, int t0, int t1, float* out,
                int64_t out_stride) const override {
    CheckRange(p, t0, t1);
    const int n_out = static_cast<int>(channels_.size());
    float tmp[kMaxRowStoreHeadDim];  // [hd] one dequantized pre-RoPE key after RoPE
    for (int t = t0; t < t1;) {
      if (const float* e = Exact(p, t)) {
        for (int j = 0; j < n_q; ++j)
          out[j * out_stride + t - t0] = f32_.dot(AsBytes(e), q + j * q_stride, hd_, params_);
        ++t;
        continue;
      }
      if (rope_) {
        Dequant(t, tmp);
        for (int j = 0; j < n_q; ++j)
          out[j * out_stride + t - t0] = f32_.dot(AsBytes(tmp), q + j * q_stride, hd_, params_);
        ++t;
        continue;
      }
      const int end = PackedRunEnd(p, t, t1);
      codec_.dot_rows(Packed(t), row_bytes_, end - t, q, q_stride, n_q, hd_, out + (t - t0), out_stride, params_);
      for (; n_out > 0 && t < end; ++t) {  // the f32 outlier channels, added after the packed dot
        const float* ov = OutlierVals(t);
        for (int j = 0; j < n_q; ++j) {
          float& o = out[j * out_stride + t - t0];
          const float* qj = q + j * q_stride;
          for (int c = 0; c < n_out; ++c) o += qj[channels_[c]] * ov[c];
        }
      }
      t = end;
    }
  }

  void WeightedSum(const float* w, int p, int t0, int t1, float* acc) const override {
    WeightedSumMulti(w, 0, 1, p, t0, t1, acc, 0);
  }

  // Rows in ascending t, each weight row j getting WeightedSum's fma sequence: exact rows one by
  // one, runs of packed rows through the codec's axpy_rows (accumulators kept in registers across
  // the run, bit-identical to per-row axpy). Outlier channels (keys only) and pre-RoPE keys go
  // row by row so their extra terms stay in place.
  void WeightedSumMulti(const float* w, int64_t w_stride, int n_w, int p, int t0, int t1, float* acc,
                        int64_t acc_stride) const override {
    CheckRange(p, t0, t1);
    const int n_out = static_cast<int>(channels_.size());
    float tmp[kMaxRowStoreHeadDim];  // [hd] one dequantized pre-RoPE key after RoPE
    for (int t = t0; t < t1;) {
      const float* e = Exact(p, t);
      if (!e && !rope_ && n_out == 0) {
        const int end = PackedRunEnd(p, t, t1);
        codec_.axpy_rows(Packed(t), row_bytes_, end - t, w + (t - t0), w_stride, n_w, acc, acc_stride, hd_, params_);
        t = end;
        continue;
      }
      if (!e && rope_) {
        Dequant(t, tmp);
        e = tmp;
      }
      const float* ov = n_out > 0 ? OutlierVals(t) : nullptr;
      for (int j = 0; j < n_w; ++j) {
        const float wt = w[j * w_stride + t - t0];
        float* a = acc + j * acc_stride;
        if (e) {
          f32_.axpy(AsBytes(e), wt, a, hd_, params_);
        } else {
          codec_.axpy(Packed(t), wt, a, hd_, params_);
          for (int c = 0; c < n_out; ++c) a[channels_[c]] += wt * ov[c];
        }
      }
      ++t;
    }
  }

  uint64_t BytesFor(int n_pos) const override {
    const uint64_t f32_row = static_cast<uint64_t>(hd_) * sizeof(float);
    const int n_sink = std::min(n_pos, sink_);
    const int n_recent = std::min(recent_, n_pos - n_sink);  // the window of the newest query
    const uint64_t n_packed = static_cast<uint64_t>(n_pos - n_sink - n_recent);
    return fixed_bytes_ + static_cast<uint64_t>(n_sink + n_recent) * f32_row +
           n_packed * (row_bytes_ + channels_.size() * sizeof(float));
  }

  bool Reserve(int n_pos) override {
    KV_CHECK(n_pos >= 0 && n_pos <= max_pos_);
    return packed_.Reserve(n_pos) && outlier_vals_.Reserve(n_pos) && ring_.Reserve(std::min(ring_cap_, n_pos));
  }
  uint64_t bytes_reserved() const override { return StorageFor(0); }
  uint64_t StorageFor(int n_pos) const override {
    return packed_.BytesFor(n_pos) + outlier_vals_.BytesFor(n_pos) + ring_.BytesFor(std::min(ring_cap_, n_pos)) +
           sink_rows_.bytes();
  }

 private:
  uint8_t* Packed(int t) { return packed_.Row(t); }
  const uint8_t* Packed(int t) const { return packed_.Row(t); }
  float* OutlierVals(int t) { return reinterpret_cast<float*>(outlier_vals_.Row(t)); }  // [n_outliers]
  const float* OutlierVals(int t) const { return reinterpret_cast<const float*>(outlier_vals_.Row(t)); }
  float* Ring(int t) { return reinterpret_cast<float*>(ring_.Row(t % ring_cap_)); }

  void CheckRange(int p, int t0, int t1) const {
    KV_CHECK_MSG(t0 >= 0 && t0 <= t1 && t1 <= size_ && p >= 0, "store read outside the stored rows");
  }

  static const uint8_t* AsBytes(const float* x) { return reinterpret_cast<const uint8_t*>(x); }

  // For a packed row t (Exact(p, t) == nullptr): the end (<= t1) of the run of packed rows from t,
  // cut at t's chunk end (runs are contiguous; attention's calls never span two chunks anyway).
  int PackedRunEnd(int p, int t, int t1) const {
    const int in_chunk = static_cast<int>(packed_.RunEnd(t, t1));
    const int end = recent_ > 0 ? std::min(in_chunk, p - recent_ + 1) : in_chunk;
    KV_CHECK(end > t);
    return end;
  }

  // The exact f32 row query p reads for row t, or nullptr when it reads the packed row.
  const float* Exact(int p, int t) const {
    if (t < sink_) return sink_rows_.data() + static_cast<int64_t>(t) * hd_;
    if (recent_ > 0 && t > p - recent_) {
      KV_CHECK_MSG(t >= size_ - ring_cap_,
                   "recent row no longer in the ring (query older than the last append window)");
      return reinterpret_cast<const float*>(ring_.Row(t % ring_cap_));
    }
    return nullptr;
  }

  // Packed row t as every query outside its window reads it: y [hd].
  void Dequant(int t, float* y) const {
    codec_.dequantize(Packed(t), y, hd_, params_);
    const int n_out = static_cast<int>(channels_.size());
    const float* ov = n_out > 0 ? OutlierVals(t) : nullptr;
    for (int j = 0; j < n_out; ++j) y[channels_[j]] = ov[j];
    if (rope_) rope_->Apply(y, 1, 1, t);
  }

  const RowCodec& codec_;
  const CodecParams params_;
  const RowCodec& f32_;  // dot/axpy of the exact rows
  const int hd_, max_pos_;
  const uint64_t row_bytes_;
  bool plain_f32_ = false;
  int size_ = 0, sink_ = 0, recent_ = 0, ring_cap_ = 0;
  std::vector<int> channels_;        // [n_outliers] ascending channel indices kept in f32 (keys)
  const RopeTable* rope_ = nullptr;  // set for pre-RoPE keys
  uint64_t fixed_bytes_ = 0;         // scales and channel indices, independent of n_pos
  ChunkedRows packed_;               // [positions, row_bytes_] bytes, in chunks
  ChunkedRows outlier_vals_;         // [positions, n_outliers] exact outlier channel values (f32), in chunks
  AlignedBuffer sink_rows_;          // [sink, hd] exact rows (after RoPE)
  ChunkedRows ring_;                 // [ring_cap, hd] exact rows of the newest positions (after RoPE), in chunks
};

}  // namespace

std::unique_ptr<TensorStore> MakeRowStore(const StoreSpec& spec) { return std::make_unique<RowStore>(spec); }

}  // namespace kvaudit
