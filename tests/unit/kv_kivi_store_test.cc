// KIVI store (kv/store/kivi_store.h): group flush points and residual sizes as a function of the query
// position, bytes, fused kernels against Materialize, constant groups, chunked vs token appends.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "kv/formats/asym_group_quant.h"
#include "kv/store/kivi_store.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

constexpr int kHd = 64;

StoreSpec Spec(bool is_key, KvFormat f, int group, int recent, int max_pos = 512) {
  StoreSpec s;
  s.is_key = is_key;
  s.head_dim = kHd;
  s.max_positions = max_pos;
  s.head.k = s.head.v = f;
  s.head.group = group;
  s.head.recent = recent;
  return s;
}

std::vector<float> RandomRows(int n, uint32_t seed) { return testing::NormalRows(n, kHd, seed); }  // [n, kHd]

// Key row t of rows [n, hd] as KIVI quantizes it: per channel over the G tokens of its group.
std::vector<float> RefKeyRow(const std::vector<float>& x, int t, int G, int bits) {
  std::vector<float> out(kHd);
  const int j = t / G;
  for (int c = 0; c < kHd; ++c) {
    uint8_t codes[64];
    float s, m, y[256];
    AsymQuantizeGroup(&x[static_cast<size_t>(j) * G * kHd + c], G, kHd, bits, codes, &s, &m);
    AsymDequantizeGroup(codes, G, bits, s, m, y, 1);
    out[c] = y[t - j * G];
  }
  return out;
}
std::vector<float> RefValueRow(const std::vector<float>& x, int t, int G, int bits) {
  std::vector<float> out(kHd);
  for (int g = 0; g < kHd / G; ++g) {
    uint8_t codes[64];
    float s, m;
    AsymQuantizeGroup(&x[static_cast<size_t>(t) * kHd + g * G], G, 1, bits, codes, &s, &m);
    AsymDequantizeGroup(codes, G, bits, s, m, &out[g * G], 1);
  }
  return out;
}

struct Case {
  KvFormat f;
  int group, recent;
};
class KiviStoreTest : public ::testing::TestWithParam<Case> {};

// Token-by-token appends; after each append, the query at p must see exactly: keys t < ⌊p/R⌋·R
// quantized (complete groups), the rest f32; values the newest min(p+1, R) f32, older quantized.
TEST_P(KiviStoreTest, ResidualAndFlushPointsFollowTheQueryPosition) {
  const Case c = GetParam();
  const int bits = c.f == KvFormat::kKivi2 ? 2 : 4, n = 300;
  const auto x = RandomRows(n, 5);
  for (bool is_key : {true, false}) {
    auto st = MakeKiviStore(Spec(is_key, c.f, c.group, c.recent));
    std::vector<float> seen(static_cast<size_t>(n) * kHd);
    for (int p = 0; p < n; ++p) {
      st->Append(p, 1, &x[static_cast<size_t>(p) * kHd], kHd, nullptr, 0);
      const int stable = is_key ? (p / c.recent) * c.recent : std::max(0, p - c.recent + 1);
      ASSERT_EQ(st->StableEnd(p), stable);
      st->Materialize(p, 0, p + 1, seen.data());
      int n_exact = 0;
      for (int t = 0; t <= p; ++t) {
        const float* row = &seen[static_cast<size_t>(t) * kHd];
        const bool exact = std::equal(row, row + kHd, &x[static_cast<size_t>(t) * kHd]);
        n_exact += exact;
        if (t >= stable) {
          ASSERT_TRUE(exact) << "p=" << p << " t=" << t;
        } else {
          const auto ref = is_key ? RefKeyRow(x, t, c.group, bits) : RefValueRow(x, t, c.group, bits);
          for (int d = 0; d < kHd; ++d) ASSERT_EQ(row[d], ref[d]) << "p=" << p << " t=" << t << " d=" << d;
        }
      }
      // Residual size: keys 1..R (p mod R + 1), values min(p + 1, R).
      ASSERT_EQ(n_exact, is_key ? p % c.recent + 1 : std::min(p + 1, c.recent)) << "p=" << p;
    }
  }
}

// Dot / WeightedSum (fused on packed data) against Materialize, at many p and unaligned ranges.
TEST_P(KiviStoreTest, FusedKernelsMatchMaterialize) {
  const Case c = GetParam();
  const int n = 300;
  const auto x = RandomRows(n, 7), q = RandomRows(1, 8), w = RandomRows(5, 9);
  for (bool is_key : {true, false}) {
    auto st = MakeKiviStore(Spec(is_key, c.f, c.group, c.recent));
    for (int p0 = 0; p0 < n; p0 += 50) {
      const int nc = std::min(50, n - p0);
      st->Append(p0, nc, &x[static_cast<size_t>(p0) * kHd], kHd, nullptr, 0);
      for (int p = p0; p < p0 + nc; p += 7) {
        for (auto [t0, t1] : {std::pair{0, p + 1}, std::pair{p / 3 + 1, p + 1}, std::pair{0, (p + 1) / 2}}) {
          if (t1 <= t0) continue;
          std::vector<float> rows(static_cast<size_t>(t1 - t0) * kHd), dot(t1 - t0), acc(kHd, 0.0f), ref_acc(kHd, 0.0f);
          st->Materialize(p, t0, t1, rows.data());
          st->Dot(q.data(), p, t0, t1, dot.data());
          st->WeightedSum(w.data(), p, t0, t1, acc.data());
          for (int t = t0; t < t1; ++t) {
            double ref = 0, mag = 0;
            for (int d = 0; d < kHd; ++d) {
              ref += static_cast<double>(q[d]) * rows[static_cast<size_t>(t - t0) * kHd + d];
              mag += std::fabs(q[d] * rows[static_cast<size_t>(t - t0) * kHd + d]);
              ref_acc[d] += w[t - t0] * rows[static_cast<size_t>(t - t0) * kHd + d];
            }
            ASSERT_NEAR(dot[t - t0], ref, 1e-5 * mag + 1e-6) << "p=" << p << " t=" << t;
          }
          for (int d = 0; d < kHd; ++d) ASSERT_NEAR(acc[d], ref_acc[d], 1e-4 * (1 + std::fabs(ref_acc[d])));
        }
      }
    }
  }
}

// A prefill that appends a chunk and then queries each position of it sees what token-by-token
// decode saw at that position.
TEST_P(KiviStoreTest, ChunkedAppendsEqualTokenAppends) {
  const Case c = GetParam();
  const int n = 300;
  const auto x = RandomRows(n, 3);
  for (bool is_key : {true, false}) {
    auto tok = MakeKiviStore(Spec(is_key, c.f, c.group, c.recent));
    std::vector<std::vector<float>> snap(n);
    for (int p = 0; p < n; ++p) {
      tok->Append(p, 1, &x[static_cast<size_t>(p) * kHd], kHd, nullptr, 0);
      snap[p].resize(static_cast<size_t>(p + 1) * kHd);
      tok->Materialize(p, 0, p + 1, snap[p].data());
    }
    auto chunked = MakeKiviStore(Spec(is_key, c.f, c.group, c.recent));
    for (int p0 = 0; p0 < n; p0 += 128) {
      const int nc = std::min(128, n - p0);
      chunked->Append(p0, nc, &x[static_cast<size_t>(p0) * kHd], kHd, nullptr, 0);
      for (int p = p0; p < p0 + nc; ++p) {
        std::vector<float> got(static_cast<size_t>(p + 1) * kHd);
        chunked->Materialize(p, 0, p + 1, got.data());
        ASSERT_EQ(got, snap[p]) << "p=" << p;
      }
    }
  }
}

// Attention reads the G query heads of a KV head through DotMulti / WeightedSumMulti: every query's
// scores and every accumulator must be bitwise what Dot / WeightedSum give for it alone (the
// TensorStore contract), whatever the query count (kernel batches of 8) and range.
TEST_P(KiviStoreTest, MultiReadsAreBitIdenticalToSingleReads) {
  const Case c = GetParam();
  const int n = 300;
  const auto x = RandomRows(n, 12), qs = RandomRows(9, 13), ws = RandomRows(9 * 320 / kHd, 14);  // [9, kHd], [9, 320]
  for (bool is_key : {true, false}) {
    auto st = MakeKiviStore(Spec(is_key, c.f, c.group, c.recent));
    st->Append(0, n, x.data(), kHd, nullptr, 0);
    for (int p : {n - 1, 200}) {
      for (auto [t0, t1] : {std::pair{0, p + 1}, std::pair{37, p - 5}, std::pair{p - 40, p + 1}}) {
        for (int n_q : {1, 3, 4, 8, 9}) {
          const int len = t1 - t0;
          std::vector<float> multi(static_cast<size_t>(n_q) * len), single(len);
          st->DotMulti(qs.data(), kHd, n_q, p, t0, t1, multi.data(), len);
          std::vector<float> acc_multi(static_cast<size_t>(n_q) * kHd, 0.5f), acc_single(kHd);
          st->WeightedSumMulti(ws.data(), 320, n_q, p, t0, t1, acc_multi.data(), kHd);
          for (int j = 0; j < n_q; ++j) {
            st->Dot(qs.data() + j * kHd, p, t0, t1, single.data());
            for (int t = 0; t < len; ++t) {
              ASSERT_EQ(std::bit_cast<uint32_t>(multi[static_cast<size_t>(j) * len + t]),
                        std::bit_cast<uint32_t>(single[t]))
                  << "key " << is_key << " p " << p << " [" << t0 << "," << t1 << ") n_q " << n_q << " q " << j << " t "
                  << t0 + t;
            }
            std::fill(acc_single.begin(), acc_single.end(), 0.5f);
            st->WeightedSum(ws.data() + j * 320, p, t0, t1, acc_single.data());
            for (int d = 0; d < kHd; ++d) {
              ASSERT_EQ(std::bit_cast<uint32_t>(acc_multi[static_cast<size_t>(j) * kHd + d]),
                        std::bit_cast<uint32_t>(acc_single[d]))
                  << "key " << is_key << " p " << p << " [" << t0 << "," << t1 << ") n_w " << n_q << " w " << j << " d "
                  << d;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kivi, KiviStoreTest,
                         ::testing::Values(Case{KvFormat::kKivi2, 32, 128}, Case{KvFormat::kKivi4, 32, 128},
                                           Case{KvFormat::kKivi2, 32, 32}, Case{KvFormat::kKivi4, 16, 64},
                                           Case{KvFormat::kKivi2, 64, 128}, Case{KvFormat::kKivi4, 8, 24},
                                           Case{KvFormat::kKivi2, 2, 16}));

TEST(KiviStore, BytesForIsHandComputed) {
  // head_dim 64, G 32, R 128, n 300. Keys: ⌊300/128⌋·128 = 256 tokens = 8 groups packed, each
  // 64 channels × (32 codes · b/8 B + f16 scale + f16 min); 300 − 256 = 44 f32 rows of 256 B.
  // Values: min(300, 128) = 128 f32 rows; 172 packed rows of 64·b/8 B + 2 groups × 4 B.
  auto k2 = MakeKiviStore(Spec(true, KvFormat::kKivi2, 32, 128));
  auto v2 = MakeKiviStore(Spec(false, KvFormat::kKivi2, 32, 128));
  auto k4 = MakeKiviStore(Spec(true, KvFormat::kKivi4, 32, 128));
  auto v4 = MakeKiviStore(Spec(false, KvFormat::kKivi4, 32, 128));
  EXPECT_EQ(k2->BytesFor(300), 8u * 64 * (8 + 4) + 44u * 256);   // 6144 + 11264
  EXPECT_EQ(v2->BytesFor(300), 172u * (16 + 8) + 128u * 256);    // 4128 + 32768
  EXPECT_EQ(k4->BytesFor(300), 8u * 64 * (16 + 4) + 44u * 256);  // 10240 + 11264
  EXPECT_EQ(v4->BytesFor(300), 172u * (32 + 8) + 128u * 256);
  EXPECT_EQ(k2->BytesFor(100), 100u * 256);  // nothing flushed before R tokens
  EXPECT_EQ(v2->BytesFor(100), 100u * 256);
  EXPECT_EQ(k2->BytesFor(0), 0u);
}

TEST(KiviStore, ConstantGroupsGiveNoNaN) {
  const int n = 200;
  std::vector<float> x(static_cast<size_t>(n) * kHd, 0.5f);  // every group constant (f16-exact)
  for (int t = 0; t < n; ++t) x[static_cast<size_t>(t) * kHd + 3] = -2.0f;
  for (bool is_key : {true, false}) {
    for (KvFormat f : {KvFormat::kKivi2, KvFormat::kKivi4}) {
      auto st = MakeKiviStore(Spec(is_key, f, 32, 32));
      st->Append(0, n, x.data(), kHd, nullptr, 0);
      std::vector<float> rows(static_cast<size_t>(n) * kHd), q(kHd, 1.0f), dot(n), acc(kHd, 0.0f), w(n, 1.0f);
      st->Materialize(n - 1, 0, n, rows.data());
      st->Dot(q.data(), n - 1, 0, n, dot.data());
      st->WeightedSum(w.data(), n - 1, 0, n, acc.data());
      if (is_key) {
        EXPECT_EQ(rows, x);  // constant key channels: exact
      }
      for (float v : rows) ASSERT_TRUE(std::isfinite(v));
      for (float v : dot) ASSERT_TRUE(std::isfinite(v));
      for (float v : acc) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

}  // namespace
}  // namespace kvaudit
