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
#include "kv/formats/float_codecs.h"
#include "kv/formats/format_table.h"
#include "kv/store/chunked_rows.h"
#include "kv/store/kivi_kernels.h"
#include "kv/store/row_store.h"  // kMaxAppendRows

namespace kvaudit {
namespace {

inline int FloorTo(int p, int m) { return (p / m) * m; }

// Key groups per storage chunk: a power of two (ChunkedRows) of about kCacheChunk positions.
int KeyGroupsPerChunk(int G) {
  int n = 1;
  while (2 * n * G <= kCacheChunk) n *= 2;
  return n;
}

class KiviStore final : public TensorStore {
 public:
  explicit KiviStore(const StoreSpec& s)
      : is_key_(s.is_key),
        hd_(s.head_dim),
        G_(s.head.KiviGroup()),
        R_(s.head.Recent()),
        bits_(Format(s.format()).code_bits),
        max_pos_(s.max_positions),
        cb_(static_cast<int>(AsymCodeBytes(G_, bits_))) {
    KV_CHECK_MSG(IsKivi(s.format()), "MakeKiviStore: not a KIVI format");
    KV_CHECK_MSG(hd_ > 0 && G_ > 0 && hd_ % G_ == 0, "KIVI: group must divide head_dim");
    KV_CHECK_MSG(hd_ <= kKiviMaxHeadDim, "KIVI: head_dim above kKiviMaxHeadDim");
    // KIVI flushes its key residual R tokens at a time in whole groups (llama_kivi.py asserts R % G == 0).
    KV_CHECK_MSG(R_ >= G_ && R_ % G_ == 0, "KIVI: recent must be a positive multiple of group");
    KV_CHECK(max_pos_ > 0);
    // Rows of codes_ / sm_: one key group (chunks of KeyGroupsPerChunk groups) or one value token.
    const uint64_t pair = 2 * sizeof(uint16_t);  // f16 scale, min
    if (is_key_) {
      codes_ = ChunkedRows(static_cast<uint64_t>(hd_) * cb_, KeyGroupsPerChunk(G_));  // [n_groups][hd][cb]
      sm_ = ChunkedRows(hd_ * pair, KeyGroupsPerChunk(G_));                           // [n_groups][hd][2]
    } else {
      codes_ = ChunkedRows(VRowBytes());     // [positions][hd/G][cb]
      sm_ = ChunkedRows((hd_ / G_) * pair);  // [positions][hd/G][2]
    }
    // Rows some query may still read in f32: at most R_ − 1 older rows + one Append's rows.
    cap_ = 1;
    while (cap_ < R_ + kMaxAppendRows) cap_ *= 2;
    ring_ = ChunkedRows(static_cast<uint64_t>(hd_) * sizeof(float));  // [cap_, hd], slots used as rows arrive
  }

  void Append(int pos0, int n, const float* rows, int64_t stride, const float*, int64_t) override {
    KV_CHECK_MSG(pos0 == size_ && n >= 0 && pos0 + n <= max_pos_, "KIVI store: append out of order or past max");
    KV_CHECK_MSG(n <= kMaxAppendRows, "KIVI store: append at most kMaxAppendRows rows per call");
    // Queries from now on are at positions >= pos0: drop f32 rows none of them reads.
    ring_begin_ = std::max(ring_begin_, StableEnd(pos0));
    KV_CHECK(pos0 + n - ring_begin_ <= cap_);
    ring_.Grow(std::min(cap_, pos0 + n));
    codes_.Grow(Rows(pos0 + n));
    sm_.Grow(Rows(pos0 + n));
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
          const float s = KeySm(j, c, 0), m = KeySm(j, c, 1);
          const uint8_t* codes = KeyCodes(j, c);
          for (int t = lo; t < hi; ++t) {
            out[static_cast<int64_t>(t - t0) * hd_ + c] =
                static_cast<float>(AsymCode(codes, t - j * G_, bits_)) * s + m;
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
        KiviKeyGroupDot(KeyCodes(j, 0), KeySmRow(j), hd_, G_, bits_, q, q_stride, n_q, lo - j * G_, hi - j * G_,
                        out + (lo - t0), out_stride);
      }
    } else {                       // not a hot path (values are summed): dequantize row by row
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
          const float s = KeySm(j, c, 0), m = KeySm(j, c, 1);
          const uint8_t* codes = KeyCodes(j, c);
          for (int t = lo; t < hi; ++t) {
            const float x = std::fma(static_cast<float>(AsymCode(codes, t - j * G_, bits_)), s, m);
            for (int i = 0; i < n_w; ++i) {
              float& a = acc[i * acc_stride + c];
              a = std::fma(x, w[i * w_stride + t - t0], a);
            }
          }
        }
      }
    } else {
      // One kernel call per chunk of rows (one fma per row in ascending t either way: same bits).
      for (int t = t0; t < qend;) {
        const int end = static_cast<int>(codes_.RunEnd(t, qend));
        KiviValueRowsAxpy(codes_.Row(t), ValueSmRow(t), end - t, hd_, G_, bits_, w + (t - t0), w_stride, n_w, acc,
                          acc_stride);
        t = end;
      }
    }
    for (int t = std::max(t0, qend); t < t1; ++t) {
      const float* x = RingRowChecked(t);
      // One fma per element (the f32 row codec's axpy, kv/formats/codec_kernels.h) for every weight row.
      F32Codec().axpy_rows(reinterpret_cast<const uint8_t*>(x), 0, 1, w + (t - t0), w_stride, n_w, acc, acc_stride, hd_,
                           CodecParams{});
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

  // Keys hold complete groups only (the residual sits in the ring).
  bool Reserve(int n) override {
    KV_CHECK(n >= 0 && n <= max_pos_);
    return codes_.Reserve(Rows(n)) && sm_.Reserve(Rows(n)) && ring_.Reserve(std::min(cap_, n));
  }
  uint64_t bytes_reserved() const override { return StorageFor(0); }
  uint64_t StorageFor(int n) const override {
    return codes_.BytesFor(Rows(n)) + sm_.BytesFor(Rows(n)) + ring_.BytesFor(std::min(cap_, n));
  }

 private:
  uint64_t VRowBytes() const { return static_cast<uint64_t>(hd_ / G_) * cb_; }
  int Rows(int n_pos) const { return is_key_ ? n_pos / G_ : n_pos; }  // rows of codes_ / sm_ for n_pos positions
  uint8_t* KeyCodes(int j, int c) { return codes_.Row(j) + static_cast<size_t>(c) * cb_; }
  const uint8_t* KeyCodes(int j, int c) const { return codes_.Row(j) + static_cast<size_t>(c) * cb_; }
  // f16 (scale, min) pairs: key group j [hd][2], value row t [hd/G][2].
  uint16_t* SmRow(int row) { return reinterpret_cast<uint16_t*>(sm_.Row(row)); }
  const uint16_t* KeySmRow(int j) const { return reinterpret_cast<const uint16_t*>(sm_.Row(j)); }
  const uint16_t* ValueSmRow(int t) const { return reinterpret_cast<const uint16_t*>(sm_.Row(t)); }
  float KeySm(int j, int c, int which) const { return F16ToF32(KeySmRow(j)[c * 2 + which]); }
  float* RingRow(int t) { return reinterpret_cast<float*>(ring_.Row(t & (cap_ - 1))); }
  const float* RingRowChecked(int t) const {
    KV_CHECK_MSG(t >= ring_begin_ && t < size_, "KIVI store: full-precision row no longer held (query out of order)");
    return reinterpret_cast<const float*>(ring_.Row(t & (cap_ - 1)));
  }
  void CheckRange(int t0, int t1) const { KV_CHECK(0 <= t0 && t0 <= t1 && t1 <= size_); }

  // Key group j = tokens [jG, jG+G): per channel min/max over the G tokens.
  void QuantizeKeyGroup(int j) {
    std::vector<float> x(static_cast<size_t>(G_) * hd_);  // [G, hd] gathered from the ring
    for (int i = 0; i < G_; ++i)
      std::memcpy(x.data() + static_cast<int64_t>(i) * hd_, RingRow(j * G_ + i), sizeof(float) * hd_);
    for (int c = 0; c < hd_; ++c) {
      float s, m;
      AsymQuantizeGroup(x.data() + c, G_, hd_, bits_, KeyCodes(j, c), &s, &m);
      SetSm(SmRow(j) + c * 2, s, m);
    }
  }
  // Value row t: per group of G channels.
  void QuantizeValueRow(int t) {
    const int ng = hd_ / G_;
    const float* x = RingRow(t);
    for (int g = 0; g < ng; ++g) {
      float s, m;
      AsymQuantizeGroup(x + g * G_, G_, 1, bits_, codes_.Row(t) + static_cast<size_t>(g) * cb_, &s, &m);
      SetSm(SmRow(t) + g * 2, s, m);
    }
  }
  void DequantValueRow(int t, float* y) const {
    const int ng = hd_ / G_;
    const uint16_t* sm = ValueSmRow(t);
    for (int g = 0; g < ng; ++g) {
      AsymDequantizeGroup(codes_.Row(t) + static_cast<size_t>(g) * cb_, G_, bits_, F16ToF32(sm[g * 2]),
                          F16ToF32(sm[g * 2 + 1]), y + g * G_, 1);
    }
  }
  static void SetSm(uint16_t* pair, float s, float m) {
    pair[0] = F32ToF16(s);  // exact: AsymQuantizeGroup returns f16 values
    pair[1] = F32ToF16(m);
  }

  const bool is_key_;
  const int hd_, G_, R_, bits_, max_pos_;
  const int cb_;       // code bytes of one G-element group
  ChunkedRows codes_;  // keys [n_groups][hd][cb]; values [positions][hd/G][cb]; in chunks
  ChunkedRows sm_;     // f16 (scale, min) pairs, rows like codes_: [..][hd or hd/G][2]
  ChunkedRows ring_;   // [cap_, hd] f32 rows [ring_begin_, size_) at slot t mod cap_, in chunks
  int cap_ = 0;        // a power of two >= R + kMaxAppendRows
  int ring_begin_ = 0, size_ = 0, n_groups_ = 0;
};

}  // namespace

std::unique_ptr<TensorStore> MakeKiviStore(const StoreSpec& spec) { return std::make_unique<KiviStore>(spec); }

}  // namespace kvaudit
