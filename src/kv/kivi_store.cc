// KIVI store: layout and residual rule in kivi_store.h.
#include "kv/kivi_store.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/status.h"
#include "kv/asym_group_quant.h"

namespace kvaudit {
namespace {

// Byte -> its codes as floats, first code in the low bits (kv/asym_group_quant.h packing).
template <int kBits>
struct CodeLut {
  static constexpr int kPer = 8 / kBits;
  std::array<std::array<float, kPer>, 256> v{};
  constexpr CodeLut() {
    for (int b = 0; b < 256; ++b)
      for (int k = 0; k < kPer; ++k) v[b][k] = static_cast<float>((b >> (kBits * k)) & ((1 << kBits) - 1));
  }
};
constexpr CodeLut<2> kLut2;
constexpr CodeLut<4> kLut4;

// codes [n_bytes] -> out [n_bytes · 8/bits] floats.
inline void UnpackCodes(const uint8_t* codes, int n_bytes, int bits, float* out) {
  if (bits == 2) {
    for (int i = 0; i < n_bytes; ++i) std::memcpy(out + 4 * i, kLut2.v[codes[i]].data(), 4 * sizeof(float));
  } else {
    for (int i = 0; i < n_bytes; ++i) std::memcpy(out + 2 * i, kLut4.v[codes[i]].data(), 2 * sizeof(float));
  }
}

inline int FloorTo(int p, int m) { return (p / m) * m; }

class KiviStore final : public TensorStore {
 public:
  explicit KiviStore(const StoreSpec& s)
      : is_key_(s.is_key), hd_(s.head_dim), G_(s.policy.KiviGroup()), R_(s.policy.Recent()),
        bits_(s.format() == KvFormat::kKivi2 ? 2 : 4), max_pos_(s.max_positions),
        cb_(static_cast<int>(AsymCodeBytes(G_, bits_))) {
    KV_CHECK_MSG(IsKivi(s.format()), "MakeKiviStore: not a KIVI format");
    KV_CHECK_MSG(hd_ > 0 && G_ > 0 && hd_ % G_ == 0, "KIVI: group must divide head_dim");
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
      std::vector<float> codes(static_cast<size_t>(cb_) * 8 / bits_);  // [G (+pad)]
      for (int j = t0 / G_; j * G_ < qend; ++j) {
        const int lo = std::max(t0, j * G_), hi = std::min(qend, (j + 1) * G_);
        for (int c = 0; c < hd_; ++c) {
          UnpackCodes(KeyCodes(j, c), cb_, bits_, codes.data());
          const float s = SmAt(j * hd_ + c, 0), m = SmAt(j * hd_ + c, 1);
          for (int t = lo; t < hi; ++t) out[static_cast<int64_t>(t - t0) * hd_ + c] = codes[t - j * G_] * s + m;
        }
      }
    } else {
      for (int t = t0; t < qend; ++t) DequantValueRow(t, out + static_cast<int64_t>(t - t0) * hd_);
    }
    for (int t = std::max(t0, qend); t < t1; ++t) {
      std::memcpy(out + static_cast<int64_t>(t - t0) * hd_, RingRowChecked(t), sizeof(float) * hd_);
    }
  }

  void Dot(const float* q, int p, int t0, int t1, float* out) const override {
    CheckRange(t0, t1);
    const int qend = std::min(t1, StableEnd(p));
    if (is_key_) {
      // Fused per group: q·k̂_t = Σ_c (q_c·s_c)·code_ct + Σ_c q_c·m_c, accumulated for all G tokens.
      std::vector<float> acc(G_), codes(static_cast<size_t>(cb_) * 8 / bits_);  // [G], [G (+pad)]
      for (int j = t0 / G_; j * G_ < qend; ++j) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        float qm = 0.0f;
        for (int c = 0; c < hd_; ++c) {
          UnpackCodes(KeyCodes(j, c), cb_, bits_, codes.data());
          const float w = q[c] * SmAt(j * hd_ + c, 0);
          qm += q[c] * SmAt(j * hd_ + c, 1);
          for (int i = 0; i < G_; ++i) acc[i] += w * codes[i];
        }
        const int lo = std::max(t0, j * G_), hi = std::min(qend, (j + 1) * G_);
        for (int t = lo; t < hi; ++t) out[t - t0] = acc[t - j * G_] + qm;
      }
    } else {
      std::vector<float> row(hd_);  // [hd]
      for (int t = t0; t < qend; ++t) {
        DequantValueRow(t, row.data());
        out[t - t0] = DotF32(q, row.data());
      }
    }
    for (int t = std::max(t0, qend); t < t1; ++t) out[t - t0] = DotF32(q, RingRowChecked(t));
  }

  void WeightedSum(const float* w, int p, int t0, int t1, float* acc) const override {
    CheckRange(t0, t1);
    const int qend = std::min(t1, StableEnd(p));
    if (is_key_) {  // not a hot path (keys are dotted): materialise group-wise
      std::vector<float> rows(static_cast<size_t>(G_) * hd_);  // [G, hd]
      for (int a = t0; a < qend; a += G_) {
        const int b = std::min(qend, a + G_);
        Materialize(p, a, b, rows.data());
        for (int t = a; t < b; ++t) Axpy(w[t - t0], rows.data() + static_cast<int64_t>(t - a) * hd_, acc);
      }
    } else {
      // Fused per (token, channel group): acc_c += (w·s)·code_c + w·m.
      std::vector<float> codes(static_cast<size_t>(cb_) * 8 / bits_);  // [G (+pad)]
      const int ng = hd_ / G_;
      for (int t = t0; t < qend; ++t) {
        const float wt = w[t - t0];
        for (int g = 0; g < ng; ++g) {
          UnpackCodes(codes_.data() + static_cast<size_t>(t) * VRowBytes() + g * cb_, cb_, bits_, codes.data());
          const float ws = wt * SmAt(t * ng + g, 0), wm = wt * SmAt(t * ng + g, 1);
          float* a = acc + g * G_;
          for (int i = 0; i < G_; ++i) a[i] += ws * codes[i] + wm;
        }
      }
    }
    for (int t = std::max(t0, qend); t < t1; ++t) Axpy(w[t - t0], RingRowChecked(t), acc);
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

  float DotF32(const float* a, const float* b) const {
    float s = 0.0f;
    for (int c = 0; c < hd_; ++c) s += a[c] * b[c];
    return s;
  }
  void Axpy(float w, const float* x, float* acc) const {
    for (int c = 0; c < hd_; ++c) acc[c] += w * x[c];
  }

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
