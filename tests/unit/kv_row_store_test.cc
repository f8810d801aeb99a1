// The generic row store: protections really read full precision (and only where they should),
// outlier channels are zeroed before packing and restored exactly, pre-RoPE keys get RoPE after
// dequantization, fused Dot/WeightedSum agree with Materialize, and BytesFor is the layout.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "kv/formats/fp8.h"
#include "kv/store/row_store.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {

constexpr int kHd = 64;

StoreSpec Spec(KvFormat f, int max_pos = 256) {
  StoreSpec s;
  s.head.k = s.head.v = f;
  s.head_dim = kHd;
  s.max_positions = max_pos;
  return s;
}

std::vector<float> Gaussian(int rows, uint32_t seed, float big = 1.0f) {
  std::vector<float> x = testing::NormalRows(rows, kHd, seed);  // [rows, hd]
  for (size_t i = 17; i < x.size(); i += kHd) x[i] *= big;
  return x;
}

// Codec round trip of one row (what a packed read must give).
std::vector<float> RoundTrip(const StoreSpec& s, const float* x) {
  const RowCodec& c = RowCodecFor(s);
  const CodecParams p = RowCodecParamsFor(s);
  std::vector<uint8_t> packed(c.row_bytes(kHd, p));
  std::vector<float> y(kHd);
  c.quantize(x, packed.data(), kHd, p);
  c.dequantize(packed.data(), y.data(), kHd, p);
  return y;
}

void AppendAll(TensorStore& st, const std::vector<float>& x, int chunk) {
  const int n = static_cast<int>(x.size() / kHd);
  for (int t0 = 0; t0 < n; t0 += chunk) {
    st.Append(t0, std::min(chunk, n - t0), x.data() + static_cast<size_t>(t0) * kHd, kHd, nullptr, 0);
  }
}

bool RowEq(const float* a, const float* b) { return std::memcmp(a, b, sizeof(float) * kHd) == 0; }

TEST(RowStore, SinksReadExactRestPacked) {
  StoreSpec s = Spec(KvFormat::kQ4_0);
  s.head.sink = 4;
  auto st = MakeRowStore(s);
  const auto x = Gaussian(40, 1);
  AppendAll(*st, x, 7);
  std::vector<float> m(40 * kHd);
  st->Materialize(39, 0, 40, m.data());
  for (int t = 0; t < 40; ++t) {
    const float* in = x.data() + t * kHd;
    if (t < 4)
      EXPECT_TRUE(RowEq(m.data() + t * kHd, in)) << t;
    else
      EXPECT_TRUE(RowEq(m.data() + t * kHd, RoundTrip(s, in).data())) << t;
  }
}

TEST(RowStore, RecentWindowMovesWithTheQuery) {
  StoreSpec s = Spec(KvFormat::kQ4_0);
  s.head.recent = 8;
  auto st = MakeRowStore(s);
  const auto x = Gaussian(200, 2);
  AppendAll(*st, x, 50);
  EXPECT_EQ(st->StableEnd(199), 192);
  std::vector<float> m(200 * kHd);
  for (int p : {199, 195, 160}) {  // 160: a query of the last appended chunk, window inside the ring
    st->Materialize(p, 0, p + 1, m.data());
    for (int t = 0; t <= p; ++t) {
      const float* in = x.data() + t * kHd;
      if (t > p - 8)
        EXPECT_TRUE(RowEq(m.data() + t * kHd, in)) << p << " " << t;
      else
        EXPECT_TRUE(RowEq(m.data() + t * kHd, RoundTrip(s, in).data())) << p << " " << t;
    }
  }
}

TEST(RowStore, OutlierChannelsZeroedBeforePackingAndRestoredExactly) {
  KvCalibration cal;
  cal.n_layers = 1, cal.n_kv_heads = 1, cal.head_dim = kHd;
  cal.k_amax = cal.v_amax = {50};
  cal.k_channel_amax.assign(kHd, 1.0f);
  cal.k_pre_rope_channel_amax.assign(kHd, 1.0f);
  cal.k_channel_amax[17] = 50;
  cal.k_channel_amax[40] = 20;
  StoreSpec s = Spec(KvFormat::kQ8_0);
  s.head.outliers = 2;
  s.calib = &cal;
  auto st = MakeRowStore(s);
  const auto x = Gaussian(20, 3, /*big=*/50.0f);
  AppendAll(*st, x, 20);
  std::vector<float> m(20 * kHd), zeroed(kHd);
  st->Materialize(19, 0, 20, m.data());
  for (int t = 0; t < 20; ++t) {
    const float* in = x.data() + t * kHd;
    std::memcpy(zeroed.data(), in, sizeof(float) * kHd);
    zeroed[17] = zeroed[40] = 0;
    const auto rt = RoundTrip(s, zeroed.data());  // the block scale without the outliers
    for (int d = 0; d < kHd; ++d) {
      const float want = (d == 17 || d == 40) ? in[d] : rt[d];
      ASSERT_EQ(m[t * kHd + d], want) << t << " " << d;
    }
  }
  // Value stores ignore outliers.
  s.is_key = false;
  EXPECT_EQ(MakeRowStore(s)->BytesFor(10), 10u * 68);
}

TEST(RowStore, PreRopeKeysGetRopeAfterDequantization) {
  RopeParams rp;
  RopeTable rope(rp, kHd, 64);
  StoreSpec s = Spec(KvFormat::kQ8_0, 64);
  s.head.pre_rope = true;
  s.rope = &rope;
  auto st = MakeRowStore(s);
  const auto pre = Gaussian(30, 4);
  auto post = pre;  // [30, hd] after RoPE
  rope.Apply(post.data(), 30, 1, 0);
  st->Append(0, 30, post.data(), kHd, pre.data(), kHd);
  std::vector<float> m(30 * kHd);
  st->Materialize(29, 0, 30, m.data());
  for (int t = 0; t < 30; ++t) {
    auto want = RoundTrip(s, pre.data() + t * kHd);
    rope.Apply(want.data(), 1, 1, t);
    EXPECT_TRUE(RowEq(m.data() + t * kHd, want.data())) << t;
  }
}

TEST(RowStore, FusedReadsAgreeWithMaterialize) {
  for (KvFormat f :
       {KvFormat::kQ4_0, KvFormat::kQ5_1, KvFormat::kIq4Nl, KvFormat::kInt4, KvFormat::kFp8E5M2, KvFormat::kBF16}) {
    StoreSpec s = Spec(f);
    s.head.sink = 3;
    s.head.recent = 16;
    auto st = MakeRowStore(s);
    const auto x = Gaussian(100, 5);
    AppendAll(*st, x, 33);
    const auto q = Gaussian(1, 6);
    std::vector<float> m(100 * kHd), dots(100), w(100), acc(kHd, 0.0f), want_acc(kHd, 0.0f);
    const int p = 90;
    st->Materialize(p, 0, p + 1, m.data());
    st->Dot(q.data(), p, 0, p + 1, dots.data());
    for (int t = 0; t <= p; ++t) {
      double d = 0;
      for (int c = 0; c < kHd; ++c) d += static_cast<double>(q[c]) * m[t * kHd + c];
      EXPECT_NEAR(dots[t], d, 1e-4 * (1 + std::fabs(d))) << KvFormatName(f) << " " << t;
      w[t] = 0.01f * static_cast<float>(t % 7);
      for (int c = 0; c < kHd; ++c) want_acc[c] += w[t] * m[t * kHd + c];
    }
    st->WeightedSum(w.data(), p, 0, p + 1, acc.data());
    for (int c = 0; c < kHd; ++c) EXPECT_NEAR(acc[c], want_acc[c], 1e-4) << KvFormatName(f);
  }
}

// Decode attention reads V through WeightedSumMulti (the G heads of a KV head interleaved per row);
// each accumulator must get exactly WeightedSum's bits, or batch invariance and the f32 parity break.
TEST(RowStore, WeightedSumMultiIsBitIdenticalToWeightedSumPerRow) {
  for (KvFormat f : {KvFormat::kF32, KvFormat::kF16, KvFormat::kQ8_0, KvFormat::kQ4_0, KvFormat::kQ5_1,
                     KvFormat::kIq4Nl, KvFormat::kInt4, KvFormat::kFp8E4M3}) {
    for (int recent : {0, 16}) {
      StoreSpec s = Spec(f);
      s.head.sink = recent > 0 ? 3 : 0;
      s.head.recent = recent;
      auto st = MakeRowStore(s);
      AppendAll(*st, Gaussian(100, 5), 33);
      constexpr int kW = 4, kStride = 128;  // [kW, kStride] weights, [kW, kHd] accumulators
      const auto w = Gaussian(kW * kStride / kHd + 1, 7);
      const int p = 90, t0 = 7, t1 = p + 1;
      std::vector<float> multi(kW * kHd, 0.5f), single(kW * kHd, 0.5f);
      st->WeightedSumMulti(w.data(), kStride, kW, p, t0, t1, multi.data(), kHd);
      for (int j = 0; j < kW; ++j) st->WeightedSum(w.data() + j * kStride, p, t0, t1, single.data() + j * kHd);
      for (int i = 0; i < kW * kHd; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(multi[i]), std::bit_cast<uint32_t>(single[i]))
            << KvFormatName(f) << " recent " << recent << " element " << i;
      }
    }
  }
}

TEST(RowStore, BytesForIsTheLayout) {
  EXPECT_EQ(MakeRowStore(Spec(KvFormat::kF32))->BytesFor(100), 100u * 256);
  EXPECT_EQ(MakeRowStore(Spec(KvFormat::kF16))->BytesFor(100), 100u * 128);
  EXPECT_EQ(MakeRowStore(Spec(KvFormat::kQ4_0))->BytesFor(100), 100u * 36);  // 2 blocks of 18 bytes
  EXPECT_EQ(MakeRowStore(Spec(KvFormat::kInt4))->BytesFor(100), 100u * 36);  // group 64: 32 codes + f16 scale, min
  StoreSpec prot = Spec(KvFormat::kQ4_0);
  prot.head.sink = 4;
  prot.head.recent = 8;
  EXPECT_EQ(MakeRowStore(prot)->BytesFor(100), 12u * 256 + 88u * 36);
  EXPECT_EQ(MakeRowStore(prot)->BytesFor(10), 10u * 256);
  // fp8 unit: 1 byte per element + one f32 scale per layer, counted in KV head 0's store only.
  StoreSpec fp8 = Spec(KvFormat::kFp8E4M3);
  EXPECT_EQ(MakeRowStore(fp8)->BytesFor(100), 100u * 64 + 4);
  fp8.kv_head = 1;
  EXPECT_EQ(MakeRowStore(fp8)->BytesFor(100), 100u * 64);
  fp8.head.scale_by = Fp8ScaleBy::kHead;
  EXPECT_EQ(MakeRowStore(fp8)->BytesFor(100), 100u * 64 + 4);
  fp8.head.scale = Fp8ScaleMode::kDynamic;  // 32-element blocks of {f32 scale, 32 codes}
  EXPECT_EQ(MakeRowStore(fp8)->BytesFor(100), 100u * 72);
  // Full-precision formats ignore modifiers.
  StoreSpec f16 = Spec(KvFormat::kF16);
  f16.head.sink = 4;
  f16.head.recent = 8;
  EXPECT_EQ(MakeRowStore(f16)->BytesFor(100), 100u * 128);
}

TEST(RowStore, OutlierBytes) {
  KvCalibration cal;
  cal.n_layers = 1, cal.n_kv_heads = 1, cal.head_dim = kHd;
  cal.k_channel_amax.assign(kHd, 1.0f);
  StoreSpec s = Spec(KvFormat::kQ8_0);
  s.head.outliers = 4;
  s.calib = &cal;
  // 10 rows of 68 bytes (2 q8_0 blocks) + 4 f32 channel values each + 4 int32 channel indices.
  EXPECT_EQ(MakeRowStore(s)->BytesFor(10), 10u * (68 + 16) + 16);
}

TEST(RowStore, Fp8CalibScaleFromCalibration) {
  KvCalibration cal;
  cal.n_layers = 1, cal.n_kv_heads = 2, cal.head_dim = kHd;
  cal.k_amax = {3.0f, 7.0f};
  cal.v_amax = {2.0f, 1.0f};
  StoreSpec s = Spec(KvFormat::kFp8E4M3);
  s.head.scale = Fp8ScaleMode::kCalib;
  s.calib = &cal;
  EXPECT_EQ(RowCodecParamsFor(s).scale, Fp8CalibScale(7.0f, Fp8Kind::kE4M3));  // per layer: max over heads
  s.head.scale_by = Fp8ScaleBy::kHead;
  EXPECT_EQ(RowCodecParamsFor(s).scale, Fp8CalibScale(3.0f, Fp8Kind::kE4M3));
  s.is_key = false;
  EXPECT_EQ(RowCodecParamsFor(s).scale, Fp8CalibScale(2.0f, Fp8Kind::kE4M3));
}

TEST(RowStore, F32StoreExposesItsRows) {
  auto st = MakeRowStore(Spec(KvFormat::kF32));
  const auto x = Gaussian(10, 7);
  AppendAll(*st, x, 10);
  const auto* view = dynamic_cast<const F32RowsView*>(st.get());
  ASSERT_NE(view, nullptr);
  ASSERT_TRUE(view->exact_f32());
  EXPECT_EQ(std::memcmp(view->f32_rows_from(0), x.data(), x.size() * 4), 0);
  EXPECT_FALSE(dynamic_cast<const F32RowsView*>(MakeRowStore(Spec(KvFormat::kF16)).get())->exact_f32());
}

}  // namespace
}  // namespace kvaudit
