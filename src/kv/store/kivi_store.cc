// KIVI store: layout and residual rule in kivi_store.h; the fused read kernels and their arithmetic
// in kv/store/kivi_kernels.h.
#include "ops/dot.h"  // first: see the note on GCC bug 105593

#include "kv/store/kivi_store.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/status.h"
#include "kv/formats/asym_group_quant.h"
#include "kv/formats/f32.h"
#include "kv/formats/format_table.h"
#include "kv/store/kivi_kernels.h"

namespace kvaudit {
namespace {

inline int FloorTo(int p, int m) { return (p / m) * m; }

class KiviStore final : public TensorStore {
 public:
  explicit KiviStore(const StoreSpec& s)
      : is_key_(s.is_key), hd_(s.head_dim), G_(s.policy.KiviGroup()), R_(s.policy.Recent()),
        bits_(Format(s.format()).code_bits), max_pos_(s.max_positions),
        cb_(static_cast<int>(AsymCodeBytes(G_, bits_))) {
    KV_CHECK_MSG(IsKivi(s.format()), "MakeKiviStore: not a KIVI format");
    KV_CHECK_MSG(hd_ > 0 && G_ > 0 && hd_ % G_ == 0, "KIVI: group must divide head_dim");
    KV_CHECK_MSG(hd_ <= kKiviMaxHeadDim, "KIVI: head_dim above kKiviMaxHeadDim");
    // KIVI flushes its key residual R tokens at a time in whole groups (llama_kivi.py asserts R % G == 0).
    KV_CHECK_MSG(R_ >= G_ && R_ % G_ == 0, "KIVI: recent must be a positive multiple of group");
    KV_CHECK(max_pos_ > 0);
    if (is_key_) {
      const int n_groups = max_pos_ / G_;
      codes_.resize(static_cast<size_t>(n_groups) * hd_ * cb_);  // [n_groups][hd][cb]
      sm_.resize(static_cast<size_t>(n_groups) * hd_ * 2);        // [n_groups][hd][scale, min]
    } else {
      codes_.resize(static_cast<size_t>(max_pos_) * VRowBytes());  // [max_pos][hd/G][cb]
      sm_.resize(static_cast<size_t>(max_pos_) * (hd_ / G_) * 2);  // [max_pos][hd/G][scale, min]
    }
    GrowRing(R_ + 64);
  }

  void Append(int pos0, int n, const float* rows, int64_t stride, const float*, int64_t) override {
    KV_CHECK_MSG(pos0 == size_ && n >= 0 && pos0 + n <= max_pos_, "KIVI store: append out of order or past max");
    // Queries from now on are at positions >= pos0: drop f32 rows none of them reads.
    ring_begin_ = std::max(ring_begin_, StableEnd(pos0));
    if (pos0 + n - ring_begin_ > cap_) GrowRing(pos0 + n - ring_begin_);
    for (int i = 0; i < n; ++i) {
      const int t = pos0 + i;
      std::memcpy(RingRow(t), rows + i * stride, sizeof(float) * hd_);
      if (!is_key_) QuantizeValueRow(t);
    }
    size_ = pos0 + n;
    if (is_key_) {
      for (int j = n_groups_; (j + 1) * G_ <= size_; ++j) QuantizeKeyGroup(j);
      n_groups_ = size_ / G_;
    }
  }

  void Reset() override { size_ = ring_begin_ = n_groups_ = 0; }
  int size() const override { return size_; }

  int StableEnd(int p) const override { return is_key_ ? FloorTo(p, R_) : std::max(0, p - R_ + 1); }

  void Materialize(int p, int t0, int t1, float* out) const override {
    CheckRange(t0, t1);
    const int qend = std::min(t1, StableEnd(p));
    if (is_key_) {
      for (int j = t0 / G_; j * G_ < qend; ++j) {
        const int lo = std::max(t0, j * G_), hi = std::min(qend, (j + 1) * G_);
        for (int c = 0; c < hd_; ++c) {
          const float s = SmAt(j * hd_ + c, 0), m = SmAt(j * hd_ + c, 1);
          for (int t = lo; t < hi; ++t) {
            out[static_cast<int64_t>(t - t0) * hd_ + c] = static_cast<float>(AsymCode(KeyCodes(j, c), t - j * G_, bits_)) * s + m;
          }
        }
      }
    } else {
      for (int t = t0; t < qend; ++t) DequantValueRow(t, out + static_cast<int64_t>(t - t0) * hd_);
    }
    for (int t = std::max(t0, qend); t < t1; ++t) {
      std::memcpy(out + static_cast<int64_t>(t - t0) * hd_, RingRowChecked(t), sizeof(float) * hd_);
    }
  }

  void Dot(const float* q, int p, int t0, int t1, float* out) const override { DotMulti(q, 0, 1, p, t0, t1, out, 0); }

  // Keys: per group, every query's dots of the requested tokens from one decode of the codes
  // (kv/store/kivi_kernels.h: a token's score depends on its group only); f32 rows: the canonical DotF32.
  void DotMulti(const float* q, int64_t q_stride, int n_q, int p, int t0, int t1, float* out,
                int64_t out_stride) const override {
    CheckRange(t0, t1);
    const int qend = std::min(t1, StableEnd(p));
    if (is_key_) {
      for (int j = t0 / G_; j * G_ < qend; ++j) {
        const int lo = std::max(t0, j * G_), hi = std::min(qend, (j + 1) * G_);
        KiviKeyGroupDot(KeyCodes(j, 0), sm_.data() + static_cast<size_t>(j) * hd_ * 2, hd_, G_, bits_, q, q_stride,
                        n_q, lo - j * G_, hi - j * G_, out + (lo - t0), out_stride);
      }
    } else {  // not a hot path (values are summed): dequantize row by row
      float row[kKiviMaxHeadDim];  // [hd]
      for (int t = t0; t < qend; ++t) {
        DequantValueRow(t, row);
        for (int i = 0; i < n_q; ++i) out[i * out_stride + t - t0] = DotF32(q + i * q_stride, row, hd_);
      }
    }
    for (int t = std::max(t0, qend); t < t1; ++t) {
      const float* x = RingRowChecked(t);
      for (int i = 0; i < n_q; ++i) out[i * out_stride + t - t0] = DotF32(q + i * q_stride, x, hd_);
    }
  }

  void WeightedSum(const float* w, int p, int t0, int t1, float* acc) const override {
    WeightedSumMulti(w, 0, 1, p, t0, t1, acc, 0);
  }

  // Values: the packed rows of [t0, qend) for all n_w weight rows at once, then the f32 rows; every
  // accumulator element sees one fma per row in ascending t (kv/store/kivi_kernels.h).
  void WeightedSumMulti(const float* w, int64_t w_stride, int n_w, int p, int t0, int t1, float* acc,
                        int64_t acc_stride) const override {
    CheckRange(t0, t1);
    const int qend = std::min(t1, StableEnd(p));
    if (is_key_) {  // not a hot path (keys are dotted): per group and channel, tokens ascending
      for (int j = t0 / G_; j * G_ < qend; ++j) {
        const int lo = std::max(t0, j * G_), hi = std::min(qend, (j + 1) * G_);
        for (int c = 0; c < hd_; ++c) {
          const float s = SmAt(j * hd_ + c, 0), m = SmAt(j * hd_ + c, 1);
          for (int t = lo; t < hi; ++t) {
            const float x = std::fma(static_cast<float>(AsymCode(KeyCodes(j, c), t - j * G_, bits_)), s, m);
            for (int i = 0; i < n_w; ++i) {
              float& a = acc[i * acc_stride + c];
              a = std::fma(x, w[i * w_stride + t - t0], a);
            }
          }
        }
      }
    } else if (qend > t0) {
      const int ng = hd_ / G_;
      KiviValueRowsAxpy(codes_.data() + static_cast<size_t>(t0) * VRowBytes(), sm_.data() + static_cast<size_t>(t0) * ng * 2,
                        qend - t0, hd_, G_, bits_, w, w_stride, n_w, acc, acc_stride);
    }
    for (int t = std::max(t0, qend); t < t1; ++t) {
      const float* x = RingRowChecked(t);
      // One fma per element (the f32 row codec's axpy, kv/formats/codec_kernels.h) for every weight row.
      F32Codec().axpy_rows(reinterpret_cast<const uint8_t*>(x), 0, 1, w + (t - t0), w_stride, n_w, acc, acc_stride,
                           hd_, CodecParams{});
    }
  }

  uint64_t BytesFor(int n) const override {
    const uint64_t f32_row = static_cast<uint64_t>(hd_) * 4;
    if (is_key_) {
      const uint64_t nq = static_cast<uint64_t>(FloorTo(n, R_));
      const uint64_t groups = nq / G_;
      return groups * hd_ * (static_cast<uint64_t>(cb_) + 4) + (n - nq) * f32_row;
    }
    const uint64_t nf = static_cast<uint64_t>(std::min(n, R_));
    return (n - nf) * (VRowBytes() + static_cast<uint64_t>(hd_ / G_) * 4) + nf * f32_row;
  }

 private:
  uint64_t VRowBytes() const { return static_cast<uint64_t>(hd_ / G_) * cb_; }
  const uint8_t* KeyCodes(int j, int c) const { return codes_.data() + (static_cast<size_t>(j) * hd_ + c) * cb_; }
  float SmAt(int idx, int which) const { return F16ToF32(sm_[static_cast<size_t>(idx) * 2 + which]); }
  float* RingRow(int t) { return ring_.data() + static_cast<int64_t>(t & (cap_ - 1)) * hd_; }
  const float* RingRowChecked(int t) const {
    KV_CHECK_MSG(t >= ring_begin_ && t < size_, "KIVI store: full-precision row no longer held (query out of order)");
    return ring_.data() + static_cast<int64_t>(t & (cap_ - 1)) * hd_;
  }
  void CheckRange(int t0, int t1) const { KV_CHECK(0 <= t0 && t0 <= t1 && t1 <= size_); }

  // Ring capacity: a power of two >= need, rows [ring_begin_, size_) kept at slot t mod capacity.
  void GrowRing(int need) {
    int cap = 1;
    while (cap < need) cap *= 2;
    if (cap <= cap_) return;
    std::vector<float> next(static_cast<size_t>(cap) * hd_);  // [cap, hd]
    for (int t = ring_begin_; t < size_; ++t) {
      std::memcpy(next.data() + static_cast<int64_t>(t & (cap - 1)) * hd_, RingRow(t), sizeof(float) * hd_);
    }
    ring_.swap(next);
    cap_ = cap;
  }

  // Key group j = tokens [jG, jG+G): per channel min/max over the G tokens.
  void QuantizeKeyGroup(int j) {
    std::vector<float> x(static_cast<size_t>(G_) * hd_);  // [G, hd] gathered from the ring
    for (int i = 0; i < G_; ++i) std::memcpy(x.data() + static_cast<int64_t>(i) * hd_, RingRow(j * G_ + i), sizeof(float) * hd_);
    for (int c = 0; c < hd_; ++c) {
      float s, m;
      AsymQuantizeGroup(x.data() + c, G_, hd_, bits_, codes_.data() + (static_cast<size_t>(j) * hd_ + c) * cb_, &s, &m);
      SetSm(j * hd_ + c, s, m);
    }
  }
  // Value row t: per group of G channels.
  void QuantizeValueRow(int t) {
    const int ng = hd_ / G_;
    const float* x = RingRow(t);
    for (int g = 0; g < ng; ++g) {
      float s, m;
      AsymQuantizeGroup(x + g * G_, G_, 1, bits_, codes_.data() + static_cast<size_t>(t) * VRowBytes() + g * cb_, &s, &m);
      SetSm(t * ng + g, s, m);
    }
  }
  void DequantValueRow(int t, float* y) const {
    const int ng = hd_ / G_;
    for (int g = 0; g < ng; ++g) {
      AsymDequantizeGroup(codes_.data() + static_cast<size_t>(t) * VRowBytes() + g * cb_, G_, bits_,
                          SmAt(t * ng + g, 0), SmAt(t * ng + g, 1), y + g * G_, 1);
    }
  }
  void SetSm(int idx, float s, float m) {
    sm_[static_cast<size_t>(idx) * 2] = F32ToF16(s);  // exact: AsymQuantizeGroup returns f16 values
    sm_[static_cast<size_t>(idx) * 2 + 1] = F32ToF16(m);
  }

  const bool is_key_;
  const int hd_, G_, R_, bits_, max_pos_;
  const int cb_;                 // code bytes of one G-element group
  std::vector<uint8_t> codes_;   // keys [max_pos/G][hd][cb]; values [max_pos][hd/G][cb]
  std::vector<uint16_t> sm_;     // f16 (scale, min) pairs, indexed like the groups of codes_
  std::vector<float> ring_;      // [cap_, hd] f32 rows [ring_begin_, size_) at slot t mod cap_
  int cap_ = 0, ring_begin_ = 0, size_ = 0, n_groups_ = 0;
};

}  // namespace

std::unique_ptr<TensorStore> MakeKiviStore(const StoreSpec& spec) { return std::make_unique<KiviStore>(spec); }

}  // namespace kvaudit
