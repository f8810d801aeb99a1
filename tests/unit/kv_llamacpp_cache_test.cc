// engine=llama.cpp emulation (kv/llamacpp_*): Q conversion and rotation hand-checked, SIMD kernels
// against their scalar twins, scores against ggml's generic vec_dot, prefill == decode, rotation on/off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "kv/f32_cache.h"
#include "kv/llamacpp/attention.h"
#include "kv/llamacpp/cache.h"
#include "kv/llamacpp/flash_attn.h"
#include "quant/q8_activation.h"
#include "base/simd.h"
#include "support/random_rows.h"

namespace kvaudit {
namespace {
using namespace llamacpp;

TEST(LlamaCppFa, QConversionIsTheX86Q8_0) {
  // amax 127 -> d = 1, id = 127/127 = 1: codes are x rounded half to EVEN (the x86 from_float),
  // where quantize_row_q8_0_ref's roundf would give 3, 4, -3.
  float q[32] = {127.0f, 2.5f, 3.5f, -2.5f, 0.49f, -127.0f};
  int8_t c[32];
  float d[1], m[1];
  ConvertQRow(KvFormat::kQ8_0, q, 32, {c, d, m});
  EXPECT_EQ(d[0], 1.0f);
  const int8_t want[6] = {127, 2, 4, -2, 0, -127};
  for (int j = 0; j < 6; ++j) EXPECT_EQ(c[j], want[j]) << j;
  for (int j = 6; j < 32; ++j) EXPECT_EQ(c[j], 0);
  // q8_1 (for q4_1/q5_1 K): the same codes plus s = fp16(d·Σq) = 127 + 2 + 4 − 2 − 127 = 4.
  ConvertQRow(KvFormat::kQ4_1, q, 32, {c, d, m});
  EXPECT_EQ(c[2], 4);
  EXPECT_EQ(m[0], 4.0f);
}

TEST(LlamaCppFa, ScoreKernelsMatchTwinsAndGgmlGeneric) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(1);
    const int hd = 128, nb = hd / 32;
    for (KvFormat f :
         {KvFormat::kQ8_0, KvFormat::kQ4_0, KvFormat::kQ4_1, KvFormat::kQ5_0, KvFormat::kQ5_1, KvFormat::kIq4Nl}) {
      for (int trial = 0; trial < 50; ++trial) {
        std::vector<float> k(hd), q(hd);
        for (float& v : k) v = rng.Normal(trial % 5 == 0 ? 30.0f : 1.0f);
        for (float& v : q) v = rng.Normal();
        // K bytes through the cache's write path, read back through the expanded form.
        std::vector<uint8_t> kb(hd * 2), qb(hd * 2);
        WriteRow(f, k.data(), hd, kb.data());  // the cache write path (x86 q8_0, *_ref others)
        std::vector<int8_t> kc(hd), qc(hd);
        std::vector<float> kd(nb), km(nb), qd(nb), qm(nb);
        ExpandKRow(f, kb.data(), hd, {kc.data(), kd.data(), km.data()});
        ConvertQRow(f, q.data(), hd, {qc.data(), qd.data(), qm.data()});
        const ggml::VecDotKind kind = DotKindOf(f);
        const float simd =
            ggml::DotQ8Blocks(kind, kc.data(), kd.data(), km.data(), qc.data(), qd.data(), qm.data(), nb);
        if (Avx2LlamaCppKernels()) {  // else ggml::DotQ8Blocks is the scalar twin (bits: kv_cross_build_bits_test)
          const float scalar =
              ggml::DotQ8BlocksScalar(kind, kc.data(), kd.data(), km.data(), qc.data(), qd.data(), qm.data(), nb);
          ASSERT_EQ(FloatToBits(simd), FloatToBits(scalar));
        }
        // ggml_vec_dot_*_generic: the same integer block sums, another f32 order.
        if (UsesQ8_1(f))
          QuantizeQ8_1RowX86(q.data(), qb.data(), hd);
        else
          QuantizeQ8_0RowX86(q.data(), qb.data(), hd);
        float generic = 0;
        switch (f) {
          case KvFormat::kQ8_0: generic = VecDotQ8_0Q8_0(kb.data(), qb.data(), hd); break;
          case KvFormat::kQ4_0: generic = VecDotQ4_0Q8_0(kb.data(), qb.data(), hd); break;
          case KvFormat::kQ4_1: generic = VecDotQ4_1Q8_1(kb.data(), qb.data(), hd); break;
          case KvFormat::kQ5_0: generic = VecDotQ5_0Q8_0(kb.data(), qb.data(), hd); break;
          case KvFormat::kQ5_1: generic = VecDotQ5_1Q8_1(kb.data(), qb.data(), hd); break;
          default: generic = VecDotIq4NlQ8_0(kb.data(), qb.data(), hd); break;
        }
        double mag = 0;
        for (int i = 0; i < hd; ++i) mag += std::fabs(k[i] * q[i]);
        ASSERT_NEAR(simd, generic, 1e-5 * mag) << KvFormatName(f);
      }
    }
  });
}

// Every kernel path (the portable one runs the scalar twins; bits: kv_cross_build_bits_test).
TEST(LlamaCppFa, AccumulatorTwinsAreBitIdentical) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(2);
    std::vector<float> v(64), a(64), b(64);
    for (int trial = 0; trial < 100; ++trial) {
      for (float& x : v) x = F16ToF32(F32ToF16(rng.Normal()));
      for (int i = 0; i < 64; ++i) a[i] = b[i] = F16ToF32(F32ToF16(rng.Normal(10.0f)));
      const float s = std::exp(rng.Normal());
      MadF16(a.data(), v.data(), s, 64);
      MadF16Scalar(b.data(), v.data(), s, 64);
      ScaleF16(a.data(), 0.7f, 64);
      ScaleF16Scalar(b.data(), 0.7f, 64);
      MadF32(a.data(), v.data(), s, 64);
      MadF32Scalar(b.data(), v.data(), s, 64);
      ScaleF32(a.data(), 0.3f, 64);
      ScaleF32Scalar(b.data(), 0.3f, 64);
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), 64 * sizeof(float)));
    }
  });
}

// MadRowsF32 (several keys, acc in registers) against its scalar twin and against MadF32 key by key,
// for head sizes that do and do not take the SIMD kernel, with zero probabilities skipped.
TEST(LlamaCppFa, SeveralKeyAccumulationIsMadF32KeyByKey) {
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(3);
    for (int hd : {40, 64, 128, 256}) {
      for (int trial = 0; trial < 20; ++trial) {
        const int kn = 1 + static_cast<int>(rng.Below(64));
        std::vector<float> v(static_cast<size_t>(kn) * hd), p(kn), a(hd), b(hd), c(hd);  // [kn, hd], [kn], [hd]
        for (float& x : v) x = rng.Normal();
        for (float& x : p) x = rng.Below(4) == 0 ? 0.0f : std::exp(rng.Normal());
        for (int i = 0; i < hd; ++i) a[i] = b[i] = c[i] = rng.Normal(10.0f);
        MadRowsF32(a.data(), v.data(), p.data(), kn, hd);
        MadRowsF32Scalar(b.data(), v.data(), p.data(), kn, hd);
        for (int j = 0; j < kn; ++j) {
          if (p[j] != 0.0f) MadF32(c.data(), &v[static_cast<size_t>(j) * hd], p[j], hd);
        }
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), hd * sizeof(float))) << hd << " " << trial;
        ASSERT_EQ(0, std::memcmp(a.data(), c.data(), hd * sizeof(float))) << hd << " " << trial;
      }
    }
  });
}

ModelConfig Tiny(int n_heads, int n_kv, int hd) {
  ModelConfig c;
  c.n_layers = 1;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv;
  c.head_dim = hd;
  c.d_model = n_heads * hd;
  return c;
}

CacheConfig Policy(const std::string& spec) {
  auto p = CacheConfig::Parse(spec);
  EXPECT_TRUE(p.ok()) << spec;
  return std::move(p).value();
}

// One token, V = e_0: the output is V as stored. Without rotation q8_0 stores e_0 in block 0 with
// d = fp16(1/127), code 127. With rotation H·e_0 = 1/8 everywhere (Sylvester, 64×64): all codes 127,
// d = fp16(0.125/127); rotating back gives H·(127·d·1) = 8·127·d·e_0 exactly.
TEST(LlamaCppCache, RotationHandChecked) {
  const ModelConfig c = Tiny(1, 1, 64);
  ThreadPool pool(1);
  std::vector<float> q(64, 0.1f), k(64, 0.2f), v(64, 0.0f), out(64);
  v[0] = 1.0f;
  for (const char* rot : {"0", "1"}) {
    auto cache = MakeLlamaCppCache(c, Policy(std::string("k=q8_0,v=q8_0,engine=llama.cpp,rot=") + rot), 4);
    cache->Append(0, 0, 1, k.data(), k.data(), v.data());
    cache->Attend(0, 0, 1, q.data(), out.data(), pool);
    const float want =
        rot[0] == '0' ? 127.0f * F16ToF32(F32ToF16(1.0f / 127)) : 8.0f * 127.0f * F16ToF32(F32ToF16(0.125f / 127));
    EXPECT_EQ(out[0], want) << "rot=" << rot;
    for (int d = 1; d < 64; ++d) EXPECT_EQ(out[d], 0.0f) << "rot=" << rot << " d=" << d;
  }
  // f16 is not quantized: rot=1 leaves it alone (ggml_is_quantized gate), so V = e_0 comes back exact.
  auto f16 = MakeLlamaCppCache(c, Policy("k=f16,v=f16,engine=llama.cpp,rot=1"), 4);
  f16->Append(0, 0, 1, k.data(), k.data(), v.data());
  f16->Attend(0, 0, 1, q.data(), out.data(), pool);
  EXPECT_EQ(out[0], 1.0f);
}

struct Data {
  std::vector<float> q, k, v;
};
Data RandomData(const ModelConfig& c, int n, float outlier) {
  testing::Rng rng(4);
  Data d;
  d.q.resize(static_cast<size_t>(n) * c.n_heads * c.head_dim);
  d.k.resize(static_cast<size_t>(n) * c.n_kv_heads * c.head_dim);
  d.v.resize(d.k.size());
  for (float& x : d.q) x = rng.Normal();
  for (float& x : d.k) x = rng.Normal();
  for (float& x : d.v) x = rng.Normal();
  for (size_t i = 5; i < d.k.size(); i += c.head_dim) d.k[i] *= outlier;  // one large key channel
  return d;
}

// Runs n tokens: prefill in chunks of `chunk` (1 = token-by-token decode).
std::vector<float> RunCache(KvCache& cache, const ModelConfig& c, const Data& d, int n, int chunk, int threads) {
  ThreadPool pool(threads);
  std::vector<float> out(d.q.size());
  const size_t qr = static_cast<size_t>(c.n_heads) * c.head_dim, kr = static_cast<size_t>(c.n_kv_heads) * c.head_dim;
  for (int p0 = 0; p0 < n; p0 += chunk) {
    const int m = std::min(chunk, n - p0);
    cache.Append(0, p0, m, &d.k[p0 * kr], &d.k[p0 * kr], &d.v[p0 * kr]);
    cache.Attend(0, p0, m, &d.q[p0 * qr], &out[p0 * qr], pool);
  }
  return out;
}

double RelErr(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

TEST(LlamaCppCache, QuantizedPrefillEqualsDecodeBitwiseAndRotationHelpsOutliers) {
  const ModelConfig c = Tiny(6, 2, 64);
  const int n = 200;
  const Data d = RandomData(c, n, 20.0f);
  auto f32 = MakeF32Cache(c, n);
  const auto ref = RunCache(*f32, c, d, n, n, 1);
  for (const char* fmt : {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"}) {
    double err[2];
    for (int rot = 0; rot < 2; ++rot) {
      const std::string spec = std::string("k=") + fmt + ",v=" + fmt + ",engine=llama.cpp,rot=" + std::to_string(rot);
      auto a = MakeLlamaCppCache(c, Policy(spec), n);
      auto b = MakeLlamaCppCache(c, Policy(spec), n);
      const auto prefill = RunCache(*a, c, d, n, 128, 2);
      const auto decode = RunCache(*b, c, d, n, 1, 1);
      ASSERT_EQ(prefill, decode) << spec;  // _one_chunk for both: the same arithmetic per query row
      err[rot] = RelErr(prefill, ref);
      EXPECT_LT(err[rot], std::string(fmt) == "q8_0" ? 0.06 : 0.5) << spec;  // Q is 8-bit too
    }
    // A 20× key channel: rotation spreads it over the block, so 4/5-bit scores get better.
    if (std::string(fmt) != "q8_0") {
      EXPECT_LT(err[1], err[0]) << fmt;
    }
  }
}

// f16 K/V: prefill takes the tiled path (Q f32, f32 accumulation), decode the one-row path
// (Q rounded to f16, V summed in an fp16 accumulator rounded after every key): they differ by
// f16 rounding of the accumulator, ~ 2^-11 relative per step.
TEST(LlamaCppCache, F16PrefillAndDecodeDifferByF16AccumulatorRounding) {
  const ModelConfig c = Tiny(6, 2, 64);
  const int n = 300;
  const Data d = RandomData(c, n, 1.0f);
  auto f32 = MakeF32Cache(c, n);
  const auto ref = RunCache(*f32, c, d, n, n, 1);
  auto a = MakeLlamaCppCache(c, Policy("k=f16,v=f16,engine=llama.cpp"), n);
  auto b = MakeLlamaCppCache(c, Policy("k=f16,v=f16,engine=llama.cpp"), n);
  const auto prefill = RunCache(*a, c, d, n, 300, 2), decode = RunCache(*b, c, d, n, 1, 2);
  EXPECT_LT(RelErr(prefill, ref), 1e-3);
  EXPECT_LT(RelErr(decode, ref), 3e-3);
  EXPECT_GT(RelErr(decode, prefill), 0.0);
  // f32 K/V through the emulation: the tiled path is f32 throughout.
  auto e = MakeLlamaCppCache(c, Policy("k=f32,v=f32,engine=llama.cpp"), n);
  EXPECT_LT(RelErr(RunCache(*e, c, d, n, 300, 1), ref), 1e-5);
}

// llama.cpp's GGUF of a Llama checkpoint has Q/K rows permuted for interleaved RoPE
// (convert_hf_to_gguf.py LlamaModel.permute), so llama.cpp quantizes K in the order
// [c0, c32, c1, c33, ...] of a 64-channel head: block 0 = HF channels 0–15 and 32–47.
std::vector<float> ToGguf(const std::vector<float>& x, int hd) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / hd; ++r)
    for (int j = 0; j < hd / 2; ++j) {
      y[r * hd + 2 * j] = x[r * hd + j];
      y[r * hd + 2 * j + 1] = x[r * hd + hd / 2 + j];
    }
  return y;
}

TEST(LlamaCppCache, LlamaKIsQuantizedInGgufChannelOrder) {
  ModelConfig c = Tiny(1, 1, 64);
  // Channel 0 is 16× the rest: in HF order it shares block 0 with channels 1–31, in GGUF order
  // with channels 1–15 and 32–47, so the two orders give different codes for channels 16–47.
  std::vector<float> k(64), v(64, 0.0f), kq(64), vq(64);
  for (int i = 0; i < 64; ++i) k[i] = 0.37f * std::sin(1.3f * i + 0.2f);
  k[0] = 6.0f;
  // Expected: permute, q4_0 write path (quantize_row_q4_0_ref), dequantize, permute back.
  const std::vector<float> kg = ToGguf(k, 64);
  std::vector<uint8_t> bytes(RowBytes(KvFormat::kQ4_0, 64));
  WriteRow(KvFormat::kQ4_0, kg.data(), 64, bytes.data());
  std::vector<float> dq(64), want(64), hf_order(64);
  RowToF32(KvFormat::kQ4_0, bytes.data(), 64, dq.data());
  for (int j = 0; j < 32; ++j) {
    want[j] = dq[2 * j];
    want[32 + j] = dq[2 * j + 1];
  }
  WriteRow(KvFormat::kQ4_0, k.data(), 64, bytes.data());
  RowToF32(KvFormat::kQ4_0, bytes.data(), 64, hf_order.data());
  ASSERT_NE(want, hf_order);  // the test discriminates between the two orders

  for (const Arch arch : {Arch::kLlama, Arch::kMistral, Arch::kQwen2}) {
    c.arch = arch;
    auto cache = MakeLlamaCppCache(c, Policy("k=q4_0,v=q4_0,engine=llama.cpp,rot=0"), 2);
    cache->Append(0, 0, 1, k.data(), k.data(), v.data());
    ASSERT_TRUE(cache->ReadRows(0, 0, 0, 0, 1, kq.data(), vq.data()));
    // qwen2/qwen3 are NEOX RoPE in llama.cpp: no permutation, HF order.
    EXPECT_EQ(kq, arch == Arch::kQwen2 ? hf_order : want) << ArchName(arch);
  }
}

// The whole K path (write, Q -> q8_0/q8_1 blocks, rotation): a 'llama' cache given HF-order Q/K is
// bitwise a 'qwen2' (no permutation) cache given the same Q/K in GGUF order.
TEST(LlamaCppCache, LlamaAttentionEqualsNeoxCacheFedGgufOrder) {
  ModelConfig c = Tiny(6, 2, 64);
  const int n = 96;
  const Data d = RandomData(c, n, 20.0f);
  Data g = d;
  g.q = ToGguf(d.q, 64);
  g.k = ToGguf(d.k, 64);
  for (const char* spec : {"k=q4_0,v=q4_0,engine=llama.cpp,rot=0", "k=q4_1,v=q5_1,engine=llama.cpp,rot=0",
                           "k=iq4_nl,v=q8_0,engine=llama.cpp,rot=1", "k=q8_0,v=q4_0,engine=llama.cpp,rot=0"}) {
    c.arch = Arch::kLlama;
    auto a = MakeLlamaCppCache(c, Policy(spec), n);
    const auto llama = RunCache(*a, c, d, n, n, 2);
    c.arch = Arch::kQwen2;
    auto b = MakeLlamaCppCache(c, Policy(spec), n);
    EXPECT_EQ(llama, RunCache(*b, c, g, n, n, 2)) << spec;
    auto h = MakeLlamaCppCache(c, Policy(spec), n);
    EXPECT_NE(llama, RunCache(*h, c, d, n, n, 2)) << spec << ": the channel order must matter";
  }
}

TEST(LlamaCppCache, ThreadCountDoesNotChangeResults) {
  const ModelConfig c = Tiny(6, 2, 64);
  const int n = 150;
  const Data d = RandomData(c, n, 1.0f);
  for (const char* spec : {"k=q4_0,v=q8_0,engine=llama.cpp", "k=f16,v=f16,engine=llama.cpp"}) {
    auto a = MakeLlamaCppCache(c, Policy(spec), n), b = MakeLlamaCppCache(c, Policy(spec), n);
    EXPECT_EQ(RunCache(*a, c, d, n, 150, 1), RunCache(*b, c, d, n, 150, 2)) << spec;
  }
  auto q = MakeLlamaCppCache(c, Policy("k=q4_0,v=q4_0,engine=llama.cpp"), n);
  EXPECT_EQ(q->bytes_per_token(), 2u * 2 * 36);  // 2 heads × (K + V) × 2 blocks × 18 B
}

}  // namespace
}  // namespace kvaudit
