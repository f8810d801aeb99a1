// llama.cpp's weight products (llamacpp_matmul.h): activations converted once per call to each
// vec_dot_type the parts need, then output rows in tiles, each tile against every activation row.
#include "ops/ggml/llamacpp_matmul.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "base/half.h"
#include "ops/ggml/kquant_vec_dot.h"
#include "ops/ggml/q4_k_repack.h"
#include "ops/ggml/q4_repack.h"
#include "ops/matmul.h"
#include "quant/q8_activation.h"

namespace kvaudit::ggml {
namespace {

// Output rows per work item: a batch's items are large already (rows × n activation rows); a decode's
// are one activation row, so it takes 4× as many rows per claim (fewer hand-offs between the threads:
// 17–21 → 21–23 tokens/s on the 1B shape, BENCHMARKS.md's opening section). No output depends on the
// split.
constexpr int64_t kRowTile = 16, kDecodeRowTile = 64;

// The 32-element block types whose activations are q8_0 (type_traits_cpu vec_dot_type) or q8_1.
bool IsQ8_0Block(QuantType t) {
  return t == QuantType::kQ4_0 || t == QuantType::kQ5_0 || t == QuantType::kQ8_0 || t == QuantType::kIQ4_NL ||
         t == QuantType::kMXFP4;
}
bool IsQ8_1Block(QuantType t) { return t == QuantType::kQ4_1 || t == QuantType::kQ5_1; }

// q4_K of rows % 8 == 0: llama.cpp repacks it (block_q4_Kx8 gemm/gemv); other rows take vec_dot.
bool Q4KRepacked(const WeightView& w) { return w.type == QuantType::kQ4_K && w.rows % 8 == 0; }

// The q8_K vec_dot of each K-quant (and iq4_xs) weight llama.cpp does not repack; null otherwise.
using Q8KDot = float (*)(const uint8_t* w, const BlockQ8_K* x, int64_t nb);
Q8KDot Q8KDotOf(const WeightView& w) {
  switch (w.type) {
    case QuantType::kQ2_K: return DotQ2_KQ8_K;
    case QuantType::kQ3_K: return DotQ3_KQ8_K;
    case QuantType::kQ4_K: return Q4KRepacked(w) ? nullptr : DotQ4_KQ8_K;
    case QuantType::kQ5_K: return DotQ5_KQ8_K;
    case QuantType::kQ6_K: return DotQ6_KQ8_K;
    case QuantType::kIQ4_XS: return DotIq4XsQ8_K;
    default: return nullptr;
  }
}

// The activation rows x [n, k] in each form a product needs (filled on first use).
// Rows are converted independently, split across the pool's threads (ForRows) when there are several.
class Activations {
 public:
  Activations(const float* x, int64_t n, int64_t k, ThreadPool& pool) : x_(x), n_(n), k_(k), pool_(&pool) {}
  int64_t n() const { return n_; }
  const float* F32(int64_t t) const { return x_ + t * k_; }
  const float* F16(int64_t t) {
    if (f16_.empty()) {
      f16_.resize(static_cast<size_t>(n_ * k_));  // from_float = ggml_cpu_fp32_to_fp16 (RNE)
      ForRows(pool_, n_, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0 * k_; i < r1 * k_; ++i) f16_[i] = F16ToF32(F32ToF16(x_[i]));
      });
    }
    return f16_.data() + t * k_;
  }
  // q8_0 by the x86 quantize_row_q8_0 (= the repacked gemm's 4x8 quantizer), expanded.
  const Q8_0Activations& Q8() {
    if (!q8_) q8_ = QuantizeQ8_0Activations(x_, n_, k_, pool_);
    return *q8_;
  }
  // q8_1 by the x86 quantize_row_q8_1, expanded: codes [k], block scales d and s = fp16(d·Σq) [k/32].
  const int8_t* Q81Codes(int64_t t) { return FillQ81(), q81_codes_.data() + t * k_; }
  const float* Q81Scales(int64_t t) { return FillQ81(), q81_d_.data() + t * (k_ / kQK); }
  const float* Q81Sums(int64_t t) { return FillQ81(), q81_s_.data() + t * (k_ / kQK); }
  const BlockQ8_K* Q8K(int64_t t) {
    if (q8k_.empty()) {
      q8k_.resize(static_cast<size_t>(n_ * (k_ / kQK_K)));
      ForRows(pool_, n_, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) QuantizeQ8_KRow(x_ + r * k_, q8k_.data() + r * (k_ / kQK_K), k_);
      });
    }
    return q8k_.data() + t * (k_ / kQK_K);
  }
  // q8_K as the repacked q4_K path quantizes it (its gemm rows by the 4x8 quantizer).
  const Q4KActivations& Q4K() {
    if (!q4k_) q4k_ = QuantizeForQ4KRepacked(x_, n_, k_, pool_);
    return *q4k_;
  }

 private:
  void FillQ81() {
    if (!q81_codes_.empty()) return;
    const int64_t nb = k_ / kQK;
    q81_codes_.resize(static_cast<size_t>(n_ * k_));
    q81_d_.resize(static_cast<size_t>(n_ * nb));
    q81_s_.resize(static_cast<size_t>(n_ * nb));
    ForRows(pool_, n_, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        QuantizeQ8RowX86Codes(x_ + r * k_, k_, true, {&q81_codes_[r * k_], &q81_d_[r * nb], &q81_s_[r * nb]});
    });
  }

  const float* x_;
  int64_t n_, k_;
  ThreadPool* pool_;
  std::vector<float> f16_;             // [n, k] f16-rounded values
  std::optional<Q8_0Activations> q8_;  // [n] rows: codes [n, k], scales [n, k/32]
  std::vector<int8_t> q81_codes_;      // [n, k]
  std::vector<float> q81_d_;           // [n, k/32]
  std::vector<float> q81_s_;           // [n, k/32]
  std::vector<BlockQ8_K> q8k_;         // [n, k/256]
  std::optional<Q4KActivations> q4k_;
};

// tinyBLAS takes the batch (llamafile_sgemm: n >= 2, rows % 4 == 0 for every tile plan, k % lanes).
bool TinyBlasTakes(const WeightView& w, int64_t n) {
  return n >= 2 && w.rows % 4 == 0 && w.cols % Lanes(kEmulatedBuild) == 0;
}

// Rows [r0, r1) of part w for every activation row: y[t, r] at y + t·ldy + r.
void FloatRows(const WeightView& w, int64_t r0, int64_t r1, Activations& a, float* y, int64_t ldy) {
  const int64_t k = w.cols;
  std::vector<float> wrow(static_cast<size_t>(k));  // [k] one weight row, exact f32 (f16 widened)
  const bool tiny = TinyBlasTakes(w, a.n()), f16 = w.type == QuantType::kF16;
  for (int64_t r = r0; r < r1; ++r) {
    WeightRowsToF32(w, r, r + 1, wrow.data());
    for (int64_t t = 0; t < a.n(); ++t) {
      const float* x = f16 ? a.F16(t) : a.F32(t);
      y[t * ldy + r] = tiny  ? TinyBlasDot(kEmulatedBuild, wrow.data(), x, k)
                       : f16 ? VecDotF16(kEmulatedBuild, wrow.data(), x, k)
                             : VecDotF32(kEmulatedBuild, wrow.data(), x, k);
    }
  }
}

// The integer dot llama.cpp runs for a 32-element block weight that is not repacked (vec_dot.h
// VecDotKind): q4_1/q5_1 take ggml_vec_dot_q4_1_q8_1 / _q5_1_q8_1 for any batch (llamafile_sgemm
// takes neither type); iq4_nl takes ggml_vec_dot_iq4_nl_q8_0 (two accumulators) for one row and
// tinyBLAS_Q0_AVX (one) for a batch; q4_0/q5_0/q8_0 form the same lanes in both kernels; mxfp4
// takes ggml_vec_dot_mxfp4_q8_0 for any batch (llamafile_sgemm has no MXFP4), whose AVX2 branch is
// iq4_nl's with kvalues_mxfp4 and the E8M0 half scale (ggml-org/llama.cpp:ggml/src/ggml-cpu/arch/
// x86/quants.c@de3ff815: two accumulators over pairs of blocks, the odd last block added after).
VecDotKind BlockDotKind(QuantType t, int64_t n) {
  if (IsQ8_1Block(t)) return VecDotKind::kAffine;
  if (t == QuantType::kMXFP4) return VecDotKind::kIq4Nl;
  if (t == QuantType::kIQ4_NL && n == 1) return VecDotKind::kIq4Nl;
  return VecDotKind::kSym;
}

int64_t StoredRow(const WeightView& w, int64_t r) { return w.row_map ? w.row_map[r] : r; }

// One activation row (decode): each weight row is read once, so it is dotted as stored (the blocks
// unpacked in registers) rather than expanded to codes in memory first; the same bits. Rows go to
// the several-row kernel in runs of equally spaced stored rows: all of them without a row map, and
// with GGUF's un-permuted q/k rows (model/weights.cc UnpermuteRowMap) runs of every other row.
void BlockRowsDecode(const WeightView& w, int64_t r0, int64_t r1, Activations& a, float* y) {
  const int64_t nb = w.cols / kQK;
  const VecDotKind kind = BlockDotKind(w.type, 1);
  const bool affine = kind == VecDotKind::kAffine;
  const int8_t* qc = affine ? a.Q81Codes(0) : a.Q8().Codes(0);
  const float* qd = affine ? a.Q81Scales(0) : a.Q8().Scales(0);
  const float* qm = affine ? a.Q81Sums(0) : nullptr;
  const auto row_bytes = static_cast<int64_t>(w.row_bytes());
  for (int64_t r = r0, e; r < r1; r = e) {
    const int64_t step = r + 1 < r1 ? StoredRow(w, r + 1) - StoredRow(w, r) : 1;  // in stored rows
    for (e = r + 1; e < r1 && StoredRow(w, e) - StoredRow(w, e - 1) == step;) ++e;
    DotQ8BlockRows(w.type, kind, w.row(r), step * row_bytes, e - r, qc, qd, qm, nb, y + r);
  }
}

// A batch: weight rows expanded 4 at a time, then dotted with every activation row (their codes,
// scales and sums are stored row after row: DotQ8BlocksBatch's layout).
void BlockRows(const WeightView& w, int64_t r0, int64_t r1, Activations& a, float* y, int64_t ldy) {
  if (a.n() == 1) return BlockRowsDecode(w, r0, r1, a, y);
  constexpr int64_t kRows = 4;  // weight rows expanded per call: DotQ8BlocksBatch's tile
  const int64_t k = w.cols, nb = k / kQK;
  const VecDotKind kind = BlockDotKind(w.type, a.n());
  const bool affine = kind == VecDotKind::kAffine;
  const int8_t* qc = affine ? a.Q81Codes(0) : a.Q8().Codes(0);   // [n, k]
  const float* qd = affine ? a.Q81Scales(0) : a.Q8().Scales(0);  // [n, k/32]
  const float* qm = affine ? a.Q81Sums(0) : nullptr;             // [n, k/32]
  std::vector<int8_t> codes(static_cast<size_t>(kRows * k));     // [4, k] the weight rows' codes
  std::vector<float> d(static_cast<size_t>(kRows * nb)), m(d);   // [4, k/32] their block scales and (q4_1/q5_1) mins
  for (int64_t r = r0; r < r1; r += kRows) {
    const int64_t n_w = std::min(kRows, r1 - r);
    for (int64_t i = 0; i < n_w; ++i)
      GetQuantTraits(w.type).to_codes(w.row(r + i), k, {&codes[i * k], &d[i * nb], &m[i * nb]});
    DotQ8BlocksBatch(kind, codes.data(), d.data(), affine ? m.data() : nullptr, n_w, qc, qd, qm, nb, a.n(), y + r, ldy);
  }
}

// The q8_K types' vec_dot, or for iq4_xs of rows % 8 == 0 in a batch of 8 or more, the IQ panel gemm.
void Q8KRows(const WeightView& w, int64_t r0, int64_t r1, Activations& a, float* y, int64_t ldy) {
  const bool panel = w.type == QuantType::kIQ4_XS && w.rows % kIqPanelRows == 0 && a.n() >= kIqPanelMinBatch;
  const Q8KDot dot = panel ? DotIq4XsQ8_KPanel : Q8KDotOf(w);
  const int64_t nb = w.cols / kQK_K;
  for (int64_t r = r0; r < r1; ++r) {
    if (w.type == QuantType::kQ6_K) {  // the activation rows are stored back to back: [n, nb] blocks
      DotQ6_KQ8_KBatch(w.row(r), a.Q8K(0), nb, a.n(), y + r, ldy);
      continue;
    }
    for (int64_t t = 0; t < a.n(); ++t) y[t * ldy + r] = dot(w.row(r), a.Q8K(t), nb);
  }
}

void PartRows(const WeightView& w, int64_t r0, int64_t r1, Activations& a, float* y, int64_t ldy) {
  if (w.type == QuantType::kF32 || w.type == QuantType::kF16) return FloatRows(w, r0, r1, a, y, ldy);
  if (Q4Repacked(w)) return Q4RepackedRows(a.Q8(), w, r0, r1, y, ldy);
  if (IsQ8_0Block(w.type) || IsQ8_1Block(w.type)) return BlockRows(w, r0, r1, a, y, ldy);
  if (Q4KRepacked(w)) return Q4KRepackedRows(a.Q4K(), w, r0, r1, y, ldy);
  return Q8KRows(w, r0, r1, a, y, ldy);
}

// Converts what the covered parts need before threads share `a` (its lazy fills are not locked).
void Prepare(const WeightMatrix& w, Activations& a) {
  for (const WeightView& p : w.parts()) {
    if (!Covers(p) || a.n() == 0) continue;
    if (p.type == QuantType::kF16) a.F16(0);
    if (IsQ8_0Block(p.type)) a.Q8();
    if (IsQ8_1Block(p.type)) a.Q81Codes(0);
    if (Q8KDotOf(p) != nullptr) a.Q8K(0);
    if (Q4KRepacked(p)) a.Q4K();
  }
}

// A part kept on kvaudit's exact products (ops/matmul.h), written at stride ldy.
void ExactPart(const float* x, int64_t n, const WeightView& part, float* y, int64_t ldy, ThreadPool& pool) {
  if (ldy == part.rows) return MatMul(x, n, part, y, pool);
  std::vector<float> dense(static_cast<size_t>(n * part.rows));  // [n, part.rows]
  MatMul(x, n, part, dense.data(), pool);
  for (int64_t t = 0; t < n; ++t) std::copy_n(&dense[t * part.rows], part.rows, y + t * ldy);
}

}  // namespace

bool Covers(const WeightView& w) {
  switch (w.type) {
    case QuantType::kF32:
    case QuantType::kF16:
    case QuantType::kQ4_0:    // rows % 8 == 0: repacked (q4_repack.h); else tinyBLAS / vec_dot
    case QuantType::kIQ4_NL:  // the same
    case QuantType::kMXFP4:   // rows % 8 == 0: repacked; else vec_dot
    case QuantType::kQ4_1:
    case QuantType::kQ5_0:
    case QuantType::kQ5_1:
    case QuantType::kQ8_0: return true;
    case QuantType::kQ2_K:
    case QuantType::kQ3_K:
    case QuantType::kQ4_K:  // rows % 8 == 0: the repacked path (block_q4_Kx8), else vec_dot_q4_K
    case QuantType::kQ5_K:
    case QuantType::kQ6_K:
    case QuantType::kIQ4_XS: return w.cols % kQK_K == 0;
    default: return false;
  }
}

void LlamaCppMatMul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool) {
  if (n <= 0 || w.rows() == 0) return;
  Activations a(x, n, w.cols(), pool);
  Prepare(w, a);
  const int64_t ldy = w.rows(), tile = n == 1 ? kDecodeRowTile : kRowTile;
  std::vector<std::pair<int, int64_t>> tiles;  // (part, first row in the part)
  std::vector<int64_t> base;                   // [parts] first output column of each part
  int64_t col = 0;
  for (int p = 0; p < static_cast<int>(w.parts().size()); ++p) {
    const WeightView& part = w.parts()[p];
    base.push_back(col);
    col += part.rows;
    if (!Covers(part)) {
      ExactPart(x, n, part, y + base[p], ldy, pool);
      continue;
    }
    for (int64_t r = 0; r < part.rows; r += tile) tiles.emplace_back(p, r);
  }
  pool.ForEachItem(static_cast<int>(tiles.size()), [&](int item, int) {
    const auto [p, r0] = tiles[item];
    const WeightView& part = w.parts()[p];
    PartRows(part, r0, std::min(part.rows, r0 + tile), a, y + base[p], ldy);
  });
}

void LlamaCppMatMulEachRow(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool) {
  for (int64_t t = 0; t < n; ++t) LlamaCppMatMul(x + t * w.cols(), 1, w, y + t * w.rows(), pool);
}

}  // namespace kvaudit::ggml
