// llama.cpp CPU flash-attention paths over one (layer, KV head): see kv/llamacpp/attention.h.
#include "kv/llamacpp/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/half.h"
#include "base/status.h"
#include "kv/formats/format_table.h"
#include "ops/ggml/vec_dot.h"
#include "quant/q8_activation.h"
#include "kv/llamacpp/expf.h"
#include "kv/llamacpp/fa_tile.h"
#include "kv/llamacpp/flash_attn.h"
#include "ops/dot.h"

namespace kvaudit::llamacpp {
namespace {

constexpr int kTileKv = 64;  // GGML_FA_TILE_KV (ggml-cpu/common.h); also our one_chunk key batch
static_assert(kCacheChunk % kTileKv == 0, "a key tile must lie in one storage chunk");
static_assert(kTileKv == kTileKeys, "fa_tile.h kernels work on the same key tiles");

// The K and V rows of the tile starting at position k0 (a multiple of kTileKv): one storage chunk,
// so contiguous, looked up once per tile; row i of the tile is position k0 + i.
struct TileRows {
  TileRows(const HeadKv& kv, int k0)
      : k(kv.k->Row(k0)), v(kv.v->Row(k0)), k_row(kv.k->row_bytes()), v_row(kv.v->row_bytes()) {}
  const uint8_t* K(int i) const { return k + static_cast<uint64_t>(i) * k_row; }
  const uint8_t* V(int i) const { return v + static_cast<uint64_t>(i) * v_row; }
  const uint8_t *k, *v;
  uint64_t k_row, v_row;
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline int FirstKey(const FaShape& sh, int p) { return sh.window > 0 ? std::max(0, p - sh.window + 1) : 0; }

// Keys [j0, k1) of the tile starting at k0, converted once for all query rows: K expanded to its
// block codes (a llama.cpp block format) or to f32 (sc.kc/kd/km or sc.kt), V to f32 (sc.vt);
// tile-relative row o = j - k0.
void ConvertTileRows(const HeadKv& kv, int k0, int j0, int k1, int hd, FaScratch& sc) {
  const bool kq = IsLlamaCppBlockFormat(kv.fk);
  const int nb = hd / 32;
  const TileRows tile(kv, k0);
  for (int j = j0; j < k1; ++j) {
    const size_t o = static_cast<size_t>(j - k0);
    if (kq)
      ExpandKRow(kv.fk, tile.K(j - k0), hd, {&sc.kc[o * hd], &sc.kd[o * nb], &sc.km[o * nb]});
    else
      RowToF32(kv.fk, tile.K(j - k0), hd, &sc.kt[o * hd]);
    RowToF32(kv.fv, tile.V(j - k0), hd, &sc.vt[o * hd]);
  }
}

const RowCodec& LlamaCppCodec(KvFormat f) {
  KV_CHECK_MSG(HasLlamaCppType(f), "engine=llama.cpp: format not supported by llama.cpp");
  return Format(f).codec();
}

template <class T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

void PrepareScratch(FaScratch& sc, int rows, int hd) {
  const size_t r = static_cast<size_t>(rows), nb = static_cast<size_t>(hd / 32 + 1);
  Grow(sc.qc, r * hd);
  Grow(sc.kc, static_cast<size_t>(kTileKv) * hd);
  Grow(sc.qd, r * nb);
  Grow(sc.qm, r * nb);
  Grow(sc.kd, kTileKv * nb);
  Grow(sc.km, kTileKv * nb);
  Grow(sc.qg, r * (hd / 4 + 1));
  Grow(sc.kg, static_cast<size_t>(kTileKv) * (hd / 4 + 1));
  Grow(sc.kdt, kTileKv * nb);
  Grow(sc.kmt, kTileKv * nb);
  Grow(sc.qf, r * hd);
  Grow(sc.kt, static_cast<size_t>(kTileKv) * hd);
  Grow(sc.vt, static_cast<size_t>(kTileKv) * hd);
  Grow(sc.s, r * kTileKv);
  Grow(sc.acc, r * hd);
  Grow(sc.m, r);
  Grow(sc.l, r);
  std::fill(sc.acc.begin(), sc.acc.begin() + r * hd, 0.0f);
  std::fill(sc.m.begin(), sc.m.begin() + rows, kNegInf);
  std::fill(sc.l.begin(), sc.l.begin() + rows, 0.0f);
}

// The kernel's scale: divided by the softcap when there is one (ops.cpp `scale /= logit_softcap`).
float KernelScale(const FaShape& sh) { return sh.softcap != 0.0f ? sh.scale / sh.softcap : sh.scale; }

// s = softcap·tanhf(s) on the scaled scores s[lo..hi] (ops.cpp, after `s = s*scale`).
void Softcap(const FaShape& sh, float* s, int lo, int hi) {
  if (sh.softcap == 0.0f) return;
  for (int j = lo; j <= hi; ++j) s[j] = sh.softcap * std::tanh(s[j]);
}

// The sinks step of each row (ops.cpp, after VKQ16 -> VKQ32): s = sinks[head]; a new maximum
// rescales VKQ (f32) and S by expf(M − s), else S gains expf(s − M).
void ApplySinks(const FaShape& sh, FaScratch& sc, int rows, int hd) {
  if (!sh.sinks) return;
  for (int r = 0; r < rows; ++r) {
    const float s = sh.sinks[r % sh.group];
    float ms = 1.0f, vs = 1.0f;
    float& M = sc.m[r];
    if (s > M) {
      ms = std::exp(M - s);
      M = s;
      ScaleF32Scalar(&sc.acc[static_cast<size_t>(r) * hd], ms, hd);
    } else {
      vs = std::exp(s - M);
    }
    sc.l[r] = std::fma(sc.l[r], ms, vs);  // S = S*ms + vs, contracted as in the key loop
  }
}

// out = VKQ · (S == 0 ? 0 : 1/S) (ops.cpp: S_inv, then ggml_vec_scale_f32), after the sinks.
void Finish(const FaShape& sh, FaScratch& sc, int rows, int hd, float* out) {
  ApplySinks(sh, sc, rows, hd);
  for (int r = 0; r < rows; ++r) {
    const float S = sc.l[r], inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (int d = 0; d < hd; ++d) out[static_cast<int64_t>(r) * hd + d] = sc.acc[static_cast<size_t>(r) * hd + d] * inv;
  }
}

}  // namespace

// The llama.cpp types' bytes are the format table's codecs' (same layouts as ggml-common.h).
uint64_t RowBytes(KvFormat f, int hd) { return LlamaCppCodec(f).row_bytes(hd, CodecParams{}); }

void WriteRow(KvFormat f, const float* x, int hd, uint8_t* dst) {
  KV_CHECK_MSG(HasLlamaCppType(f), "engine=llama.cpp: format not supported by llama.cpp");
  Format(f).ggml().from_float(x, dst, hd);
}

bool UsesTiledPath(KvFormat fk, KvFormat fv, int n_tokens) {
  return n_tokens >= 64 && fk == fv && (fk == KvFormat::kF16 || fk == KvFormat::kF32);
}

// to_float: dequantize_row_* (ggml-quants.c), fp16 / bf16 -> f32, f32 as stored.
void RowToF32(KvFormat f, const uint8_t* row, int hd, float* out) {
  LlamaCppCodec(f).dequantize(row, out, hd, CodecParams{});
}

void OneChunkRows(const FaShape& sh, const HeadKv& kv, const float* q, int nt, int p0, float* out, FaScratch& sc) {
  const int hd = sh.head_dim, G = sh.group, rows = nt * G, nb = hd / 32, ng = hd / 4;
  const float scale = KernelScale(sh);
  const bool kq = IsLlamaCppBlockFormat(kv.fk), v16 = kv.fv == KvFormat::kF16;
  const ggml::VecDotKind kind = kq ? DotKindOf(kv.fk) : ggml::VecDotKind::kSym;
  PrepareScratch(sc, rows, hd);
  // q_to_vec_dot: Q -> K's vec_dot_type, once per row.
  for (int r = 0; r < rows; ++r) {
    const float* qr = q + static_cast<int64_t>(r) * hd;
    if (kq) {
      int8_t* qc = &sc.qc[static_cast<size_t>(r) * hd];
      ConvertQRow(kv.fk, qr, hd, {qc, &sc.qd[static_cast<size_t>(r) * nb], &sc.qm[static_cast<size_t>(r) * nb]});
      QGroupCorrections(qc, hd, &sc.qg[static_cast<size_t>(r) * ng]);
    } else {
      float* qf = &sc.qf[static_cast<size_t>(r) * hd];
      std::memcpy(qf, qr, sizeof(float) * hd);
      if (kv.fk == KvFormat::kF16) RoundToF16(qf, hd);    // fp32_to_fp16 (RNE)
      if (kv.fk == KvFormat::kBF16) RoundToBF16(qf, hd);  // fp32_to_bf16 (RNE)
    }
  }
  const KTileView kt{sc.kc.data(), sc.kd.data(), sc.km.data(), sc.kg.data(), sc.kdt.data(), sc.kmt.data()};
  // Per group of ≤ 4 rows that see the same keys of a tile: [row][tile key] scores, new-max flags,
  // ms and vs (kv/llamacpp/fa_tile.h).
  alignas(64) float s[4][kTileKv], ms[4][kTileKv], vs[4][kTileKv];
  alignas(64) uint8_t up[4][kTileKv];
  const int k_lo = FirstKey(sh, p0), k_hi = p0 + nt - 1;
  for (int k0 = (k_lo / kTileKv) * kTileKv; k0 <= k_hi; k0 += kTileKv) {
    const int k1 = std::min(k0 + kTileKv, k_hi + 1), j0 = std::max(k0, k_lo);
    ConvertTileRows(kv, k0, j0, k1, hd, sc);
    if (kq)
      TransposeKTile(sc.kc.data(), sc.kd.data(), sc.km.data(), hd, j0 - k0, k1 - 1 - k0, sc.kg.data(), sc.kdt.data(),
                     sc.kmt.data());
    auto range = [&](int r, int& lo, int& hi) {  // tile-relative keys row r sees
      const int p = p0 + r / G;
      lo = std::max(FirstKey(sh, p), j0) - k0;
      hi = std::min(p, k1 - 1) - k0;
    };
    for (int r = 0; r < rows;) {
      int lo, hi;
      range(r, lo, hi);
      int n = 1;  // rows r .. r + n − 1 see the same keys
      for (int l2, h2; n < 4 && r + n < rows; ++n) {
        range(r + n, l2, h2);
        if (l2 != lo || h2 != hi) break;
      }
      if (lo > hi) {
        r += n;
        continue;
      }
      VRowsUpdate u{n, {}, {}, {}, {}, {}};
      for (int i = 0; i < n; ++i) {
        const size_t ri = static_cast<size_t>(r + i);
        if (kq) {
          const QRowView qv{&sc.qc[ri * hd], &sc.qd[ri * nb], &sc.qm[ri * nb], &sc.qg[ri * ng]};
          ScoreTileQ8(kind, kt, qv, nb, scale, lo, hi, s[i]);
        } else {
          for (int j = lo; j <= hi; ++j)
            s[i][j] =
                ggml::VecDotF16(ggml::kEmulatedBuild, &sc.qf[ri * hd], &sc.kt[static_cast<size_t>(j) * hd], hd) * scale;
        }
        Softcap(sh, s[i], lo, hi);
        SoftmaxWeights(s[i], lo, hi, sc.m[ri], up[i], ms[i], vs[i]);
        u.acc[i] = &sc.acc[ri * hd];
        u.up[i] = up[i];
        u.ms[i] = ms[i];
        u.vs[i] = vs[i];
        u.S[i] = &sc.l[ri];
      }
      SumWeights(u, lo, hi);
      AccumulateV(u, sc.vt.data(), hd, lo, hi, v16);
      r += n;
    }
  }
  Finish(sh, sc, rows, hd, out);
}

void OneChunkRowsReference(const FaShape& sh, const HeadKv& kv, const float* q, int nt, int p0, float* out,
                           FaScratch& sc) {
  const int hd = sh.head_dim, G = sh.group, rows = nt * G, nb = hd / 32;
  const bool kq = IsLlamaCppBlockFormat(kv.fk), v16 = kv.fv == KvFormat::kF16;
  const ggml::VecDotKind kind = kq ? DotKindOf(kv.fk) : ggml::VecDotKind::kSym;
  PrepareScratch(sc, rows, hd);
  // q_to_vec_dot: Q -> K's vec_dot_type, once per row.
  for (int r = 0; r < rows; ++r) {
    const float* qr = q + static_cast<int64_t>(r) * hd;
    if (kq) {
      ConvertQRow(kv.fk, qr, hd,
                  {&sc.qc[static_cast<size_t>(r) * hd], &sc.qd[static_cast<size_t>(r) * nb],
                   &sc.qm[static_cast<size_t>(r) * nb]});
    } else {
      float* qf = &sc.qf[static_cast<size_t>(r) * hd];
      std::memcpy(qf, qr, sizeof(float) * hd);
      if (kv.fk == KvFormat::kF16) RoundToF16(qf, hd);    // fp32_to_fp16 (RNE)
      if (kv.fk == KvFormat::kBF16) RoundToBF16(qf, hd);  // fp32_to_bf16 (RNE)
    }
  }
  const int k_lo = FirstKey(sh, p0), k_hi = p0 + nt - 1;
  for (int k0 = (k_lo / kTileKv) * kTileKv; k0 <= k_hi; k0 += kTileKv) {
    const int k1 = std::min(k0 + kTileKv, k_hi + 1), j0 = std::max(k0, k_lo);
    ConvertTileRows(kv, k0, j0, k1, hd, sc);
    for (int r = 0; r < rows; ++r) {
      const int p = p0 + r / G, lo = std::max(FirstKey(sh, p), j0), hi = std::min(p, k1 - 1);
      float M = sc.m[r], S = sc.l[r];
      float* a = &sc.acc[static_cast<size_t>(r) * hd];
      for (int j = lo; j <= hi; ++j) {
        const size_t o = static_cast<size_t>(j - k0);
        float s = kq ? ggml::DotQ8BlocksScalar(kind, &sc.kc[o * hd], &sc.kd[o * nb], &sc.km[o * nb],
                                               &sc.qc[static_cast<size_t>(r) * hd], &sc.qd[static_cast<size_t>(r) * nb],
                                               &sc.qm[static_cast<size_t>(r) * nb], nb)
                     : ggml::VecDotF16(ggml::kEmulatedBuild, &sc.qf[static_cast<size_t>(r) * hd], &sc.kt[o * hd], hd);
        s = s * KernelScale(sh);
        if (sh.softcap != 0.0f) s = sh.softcap * std::tanh(s);
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
          const float m_old = M;
          M = s;
          ms = std::exp(m_old - M);
          if (v16)
            ScaleF16Scalar(a, ms, hd);
          else
            ScaleF32Scalar(a, ms, hd);
        } else {
          vs = std::exp(s - M);
        }
        if (v16)
          MadF16Scalar(a, &sc.vt[o * hd], vs, hd);
        else
          MadF32Scalar(a, &sc.vt[o * hd], vs, hd);
        S = std::fma(S, ms, vs);  // S = S*ms + vs, contracted by GCC on FMA targets
      }
      sc.m[r] = M;
      sc.l[r] = S;
    }
  }
  Finish(sh, sc, rows, hd, out);
}

void TiledRows(const FaShape& sh, const HeadKv& kv, const float* q, int nt, int p0, float* out, FaScratch& sc) {
  const int hd = sh.head_dim, G = sh.group, rows = nt * G;
  KV_CHECK(UsesTiledPath(kv.fk, kv.fv, 64));
  PrepareScratch(sc, rows, hd);
  const int k_lo = FirstKey(sh, p0), k_hi = p0 + nt - 1;
  for (int k0 = (k_lo / kTileKv) * kTileKv; k0 <= k_hi; k0 += kTileKv) {
    const int k1 = std::min(k0 + kTileKv, k_hi + 1), kn = k1 - k0;
    const TileRows tile(kv, k0);
    for (int j = k0; j < k1; ++j) {  // K/V tile f16 -> f32 (ggml_fp16_to_fp32_row), exact
      RowToF32(kv.fk, tile.K(j - k0), hd, &sc.kt[static_cast<size_t>(j - k0) * hd]);
      RowToF32(kv.fv, tile.V(j - k0), hd, &sc.vt[static_cast<size_t>(j - k0) * hd]);
    }
    // KQ [rows, kn] = Q [rows, hd] · K_tileᵀ (Q not rounded: the tiled path copies Q as f32). f32
    // accumulation in the canonical dot order (ops/dot.h); ggml's simd_gemm order is not emulated.
    // Only the keys a row sees: a masked score is replaced by −inf below whatever its dot, and each
    // dot is the same bits alone (DotRowsF32), so a causal prefill skips the keys after each row.
    for (int r = 0; r < rows; ++r) {
      const int p = p0 + r / G, lo = std::max(FirstKey(sh, p), k0), hi = std::min(p, k1 - 1);
      if (lo > hi) continue;
      DotRowsF32(q + static_cast<int64_t>(r) * hd, &sc.kt[static_cast<size_t>(lo - k0) * hd], hd, hi - lo + 1, hd,
                 &sc.s[static_cast<size_t>(r) * kTileKv + (lo - k0)]);
    }
    for (int r = 0; r < rows; ++r) {
      const int p = p0 + r / G, lo = std::max(FirstKey(sh, p), k0), hi = std::min(p, k1 - 1);
      float* sr = &sc.s[static_cast<size_t>(r) * kTileKv];
      if (lo > hi) {  // the whole tile is masked for this row
        std::fill(sr, sr + kn, 0.0f);
        continue;
      }
      float tile_max = kNegInf;
      const float scale = KernelScale(sh);
      for (int j = 0; j < kn; ++j) {
        const bool seen = k0 + j >= lo && k0 + j <= hi;
        // ggml: KQ × scale, tanh and × softcap over the tile, then the mask's −inf.
        sr[j] = seen ? (sh.softcap != 0.0f ? std::tanh(sr[j] * scale) * sh.softcap : sr[j] * scale) : kNegInf;
        tile_max = std::max(tile_max, sr[j]);
      }
      const float m_old = sc.m[r], m_new = std::max(m_old, tile_max);
      if (m_new > m_old) {
        const float ms = std::exp(m_old - m_new);
        ScaleF32(&sc.acc[static_cast<size_t>(r) * hd], ms, hd);
        sc.l[r] *= ms;
      }
      sc.m[r] = m_new;
      // exp of the seen scores by ExpBatch (libm's expf bit for bit, 8 at a time), the masked 0.
      float shifted[kTileKv];  // [hi − lo + 1] the seen scores − m_new
      const int a = lo - k0, na = hi - lo + 1;
      for (int j = 0; j < na; ++j) shifted[j] = sr[a + j] == kNegInf ? kNegInf : sr[a + j] - m_new;  // exp(−inf) = 0
      std::fill(sr, sr + kn, 0.0f);
      ExpBatch(shifted, sr + a, na);
      double sum = 0.0;  // ggml_vec_soft_max_f32 returns a ggml_float (double) sum
      for (int j = 0; j < kn; ++j) sum += sr[j];
      sc.l[r] = static_cast<float>(static_cast<double>(sc.l[r]) + sum);
    }
    // VKQ [rows, hd] += P [rows, kn] · V_tile [kn, hd], in ascending key order (ggml_vec_mad_f32)
    for (int r = 0; r < rows; ++r)
      MadRowsF32(&sc.acc[static_cast<size_t>(r) * hd], sc.vt.data(), &sc.s[static_cast<size_t>(r) * kTileKv], kn, hd);
  }
  Finish(sh, sc, rows, hd, out);
}

}  // namespace kvaudit::llamacpp
