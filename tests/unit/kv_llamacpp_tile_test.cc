// engine=llama.cpp, the batched _one_chunk kernels (kv/llamacpp/fa_tile.h, expf.h): each SIMD kernel
// bitwise equal to its scalar twin, and OneChunkRows bitwise equal to the per-key loop it replaces
// (OneChunkRowsReference) over formats, head sizes, group sizes, windows, offsets, softcaps and sinks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/half.h"
#include "kv/llamacpp/attention.h"
#include "kv/llamacpp/expf.h"
#include "kv/llamacpp/fa_tile.h"
#include "kv/llamacpp/flash_attn.h"
#include "kv/store/chunked_rows.h"
#include "base/simd.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {
using namespace llamacpp;

uint32_t Bits(float x) { return std::bit_cast<uint32_t>(x); }

// The self-check passes on the machines this suite runs on (glibc's FMA expf), so the fast path is
// what runs on the AVX2 and AVX-512 paths (each checks its own kernel); where it cannot (another
// libm) ExpBatch is the scalar twin. The portable path's kernel is the libm call itself.
TEST(LlamaCppExpf, SimdKernelIsLibmOnAStridedSweepOfAllFloats) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    if (isa == Isa::kPortable) {
      EXPECT_FALSE(ExpBatchIsSimd());
      return;
    }
    EXPECT_TRUE(ExpBatchIsSimd());
    // Every 251st bit pattern (17 M floats, every exponent and sign), then every float in
    // [-1, 0) at a finer stride: the range the softmax feeds (s − M ≤ 0). bench/expf_exhaustive: all 2^32.
    constexpr int kBatch = 4096;
    std::vector<float> x(kBatch), y(kBatch);
    uint64_t checked = 0;
    auto check = [&](int n) {
      ExpBatchSimdUnchecked(x.data(), y.data(), n);
      for (int i = 0; i < n; ++i) ASSERT_EQ(Bits(y[i]), Bits(std::exp(x[i]))) << x[i];
      checked += n;
    };
    int n = 0;
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 251) {
      x[n++] = std::bit_cast<float>(static_cast<uint32_t>(b));
      if (n == kBatch) check(std::exchange(n, 0));
    }
    for (uint32_t b = Bits(-1.0f); b > 0x80000000u; b -= 61) {
      x[n++] = std::bit_cast<float>(b);
      if (n == kBatch) check(std::exchange(n, 0));
    }
    check(n);
    for (int tail = 0; tail < 9; ++tail) check(tail);  // partial registers
    EXPECT_GT(checked, 30000000u);
  });
}

// Random rows of block format f through the cache's write path, expanded (ExpandKRow).
struct Tile {
  std::vector<int8_t> kc;
  std::vector<float> kd, km;
  std::vector<int32_t> gt;
  std::vector<float> dt, mt;
  KTileView View() const { return {kc.data(), kd.data(), km.data(), gt.data(), dt.data(), mt.data()}; }
};
Tile RandomTile(KvFormat f, int hd, testing::Rng& rng, float sigma) {
  const int nb = hd / 32;
  Tile t{std::vector<int8_t>(kTileKeys * hd), std::vector<float>(kTileKeys * nb),
         std::vector<float>(kTileKeys * nb),  std::vector<int32_t>(kTileKeys * hd / 4),
         std::vector<float>(kTileKeys * nb),  std::vector<float>(kTileKeys * nb)};
  std::vector<float> x(hd);
  std::vector<uint8_t> row(RowBytes(f, hd));
  for (int j = 0; j < kTileKeys; ++j) {
    for (float& v : x) v = rng.Normal(sigma);
    WriteRow(f, x.data(), hd, row.data());
    ExpandKRow(f, row.data(), hd, {&t.kc[j * hd], &t.kd[j * nb], &t.km[j * nb]});
  }
  TransposeKTile(t.kc.data(), t.kd.data(), t.km.data(), hd, 0, kTileKeys - 1, t.gt.data(), t.dt.data(), t.mt.data());
  return t;
}

TEST(LlamaCppTile, ScoreTileMatchesScalarTwin) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(11);
    for (KvFormat f :
         {KvFormat::kQ8_0, KvFormat::kQ4_0, KvFormat::kQ4_1, KvFormat::kQ5_0, KvFormat::kQ5_1, KvFormat::kIq4Nl}) {
      for (int hd : {32, 64, 96, 128}) {
        const int nb = hd / 32;
        const Tile t = RandomTile(f, hd, rng, 1.0f + 10.0f * (hd == 96));
        for (int trial = 0; trial < 8; ++trial) {
          std::vector<float> q(hd);
          for (float& v : q) v = rng.Normal(trial % 3 == 0 ? 20.0f : 1.0f);
          std::vector<int8_t> qc(hd);
          std::vector<float> qd(nb), qm(nb);
          std::vector<int32_t> qg(hd / 4);
          ConvertQRow(f, q.data(), hd, {qc.data(), qd.data(), qm.data()});
          QGroupCorrections(qc.data(), hd, qg.data());
          const QRowView qv{qc.data(), qd.data(), qm.data(), qg.data()};
          const int lo = static_cast<int>(rng.Below(kTileKeys)), hi = lo + static_cast<int>(rng.Below(kTileKeys - lo));
          float a[kTileKeys], b[kTileKeys];
          ScoreTileQ8(DotKindOf(f), t.View(), qv, nb, 0.125f, lo, hi, a);
          ScoreTileQ8Scalar(DotKindOf(f), t.View(), qv, nb, 0.125f, lo, hi, b);
          for (int j = lo; j <= hi; ++j)
            ASSERT_EQ(Bits(a[j]), Bits(b[j])) << KvFormatName(f) << " hd " << hd << " key " << j;
          // ... and the per-key SIMD kernel (the AVX2 branch) gives the same bits.
          for (int j = lo; j <= hi; ++j) {
            const float one = ggml::DotQ8Blocks(DotKindOf(f), &t.kc[j * hd], &t.kd[j * nb], &t.km[j * nb], qc.data(),
                                                qd.data(), qm.data(), nb) *
                              0.125f;
            ASSERT_EQ(Bits(a[j]), Bits(one)) << KvFormatName(f) << " key " << j;
          }
        }
      }
    }
  });
}

TEST(LlamaCppTile, SoftmaxWeightsMatchScalarTwin) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(12);
    for (int trial = 0; trial < 400; ++trial) {
      float s[kTileKeys];
      const float spread = trial % 4 == 0 ? 300.0f : 3.0f;  // > 88 apart: expf's special path too
      for (float& v : s) v = rng.Normal(spread);
      if (trial % 7 == 0) s[rng.Below(kTileKeys)] = -std::numeric_limits<float>::infinity();
      if (trial % 11 == 0) s[rng.Below(kTileKeys)] = std::numeric_limits<float>::quiet_NaN();
      if (trial % 13 == 0) {  // signed-zero ties
        for (int j = 0; j < kTileKeys; j += 3) s[j] = (j % 2) ? 0.0f : -0.0f;
      }
      const int lo = static_cast<int>(rng.Below(kTileKeys)), hi = lo + static_cast<int>(rng.Below(kTileKeys - lo));
      float M0 = trial % 2 ? -std::numeric_limits<float>::infinity() : rng.Normal(spread), S0 = trial % 2 ? 0.0f : 3.5f;
      float Ma = M0, Sa = S0, Mb = M0, Sb = S0;
      uint8_t upa[kTileKeys], upb[kTileKeys];
      float msa[kTileKeys], msb[kTileKeys], vsa[kTileKeys], vsb[kTileKeys];
      SoftmaxWeights(s, lo, hi, Ma, upa, msa, vsa);
      VRowsUpdate u{1, {}, {upa}, {msa}, {vsa}, {&Sa}};
      SumWeights(u, lo, hi);
      SoftmaxWeightsScalar(s, lo, hi, Mb, Sb, upb, msb, vsb);
      ASSERT_EQ(Ma == 0.0f ? 0u : Bits(Ma), Mb == 0.0f ? 0u : Bits(Mb));  // M's sign of zero may differ (fa_tile.cc)
      ASSERT_EQ(Bits(Sa), Bits(Sb));
      for (int j = lo; j <= hi; ++j) {
        ASSERT_EQ(upa[j], upb[j]);
        ASSERT_EQ(Bits(msa[j]), Bits(msb[j]));
        ASSERT_EQ(Bits(vsa[j]), Bits(vsb[j]));
      }
    }
  });
}

TEST(LlamaCppTile, AccumulateVMatchesScalarTwin) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(13);
    for (int hd : {16, 32, 48, 64, 80, 96, 128, 40}) {
      const std::vector<float> vt = testing::NormalRows(kTileKeys, hd, 100 + hd);
      for (bool f16 : {false, true}) {
        for (int n_rows = 1; n_rows <= 4; ++n_rows) {
          std::vector<float> a(4 * hd), b(4 * hd);
          uint8_t up[4][kTileKeys];
          float ms[4][kTileKeys], vs[4][kTileKeys];
          for (int r = 0; r < 4; ++r) {
            for (int j = 0; j < kTileKeys; ++j) {
              up[r][j] = rng.Below(5) == 0;
              ms[r][j] = up[r][j] ? rng.Uniform() : 1.0f;
              vs[r][j] = up[r][j] ? 1.0f : rng.Uniform();
            }
          }
          for (int i = 0; i < 4 * hd; ++i) a[i] = b[i] = f16 ? F16ToF32(F32ToF16(rng.Normal())) : rng.Normal();
          VRowsUpdate ua{n_rows, {}, {}, {}, {}, {}}, ub = ua;
          for (int r = 0; r < n_rows; ++r) {
            ua.acc[r] = &a[r * hd];
            ub.acc[r] = &b[r * hd];
            ua.up[r] = ub.up[r] = up[r];
            ua.ms[r] = ub.ms[r] = ms[r];
            ua.vs[r] = ub.vs[r] = vs[r];
          }
          const int lo = static_cast<int>(rng.Below(kTileKeys)), hi = lo + static_cast<int>(rng.Below(kTileKeys - lo));
          AccumulateV(ua, vt.data(), hd, lo, hi, f16);
          AccumulateVScalar(ub, vt.data(), hd, lo, hi, f16);
          ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << hd << " " << f16 << " " << n_rows;
        }
      }
    }
  });
}

// The whole _one_chunk path against the per-key loop, on cache rows written as the cache writes them.
TEST(LlamaCppTile, OneChunkRowsEqualsPerKeyReference) {
  testing::Rng rng(14);
  const KvFormat kfs[] = {KvFormat::kQ8_0,  KvFormat::kQ4_0, KvFormat::kQ4_1, KvFormat::kQ5_0, KvFormat::kQ5_1,
                          KvFormat::kIq4Nl, KvFormat::kF16,  KvFormat::kBF16, KvFormat::kF32};
  const KvFormat vfs[] = {KvFormat::kQ8_0, KvFormat::kQ4_0, KvFormat::kF16, KvFormat::kF32};  // f16: fp16 accumulator
  int cases = 0;
  for (KvFormat fk : kfs) {
    for (KvFormat fv : vfs) {
      for (int hd : {32, 64, 96, 128}) {
        const int n_pos = 160;
        ChunkedRows k(RowBytes(fk, hd)), v(RowBytes(fv, hd));
        k.Grow(n_pos);
        v.Grow(n_pos);
        std::vector<float> x(hd);
        const float sigma = (cases % 5 == 0) ? 25.0f : 1.0f;  // large scores: expf far below 1 and underflow
        for (int t = 0; t < n_pos; ++t) {
          for (float& e : x) e = rng.Normal(sigma);
          WriteRow(fk, x.data(), hd, k.Row(t));
          for (float& e : x) e = rng.Normal();
          WriteRow(fv, x.data(), hd, v.Row(t));
        }
        const HeadKv kv{fk, fv, &k, &v};
        for (int G : {1, 3, 4}) {
          for (int window : {0, 45}) {
            const int nt = (cases % 3 == 0) ? 1 : 64 - (cases % 7) * 5, p0 = (cases % 4) * 30;
            ++cases;
            if (p0 + nt > n_pos) continue;
            FaShape sh{hd, G, window, 1.0f / std::sqrt(static_cast<float>(hd))};
            // Gemma 2's softcap and gpt-oss's sinks on some of the cases (one sink per query head).
            static const float kSinks[4] = {0.5f, -1.0f, 30.0f, 0.0f};
            if (cases % 2 == 0) sh.softcap = 2.0f;
            if (cases % 3 != 1) sh.sinks = kSinks;
            const std::vector<float> q = testing::NormalRows(nt * G, hd, cases, sigma);
            std::vector<float> a(q.size()), b(q.size());
            FaScratch sa, sb;
            OneChunkRows(sh, kv, q.data(), nt, p0, a.data(), sa);
            OneChunkRowsReference(sh, kv, q.data(), nt, p0, b.data(), sb);
            ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
                << KvFormatName(fk) << "/" << KvFormatName(fv) << " hd " << hd << " G " << G << " window " << window
                << " nt " << nt << " p0 " << p0;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 500);
}

}  // namespace
}  // namespace kvaudit
