// The canonical kernels compute the same bits on every kernel path (base/isa.h): the AVX-512
// kernels, the AVX2 ones and the scalar twins. Each kernel family runs on fixed inputs, its output
// bits are hashed, and the hash must equal a constant committed below. CI runs this test on every
// path (KVAUDIT_ISA), so the constants passing on each IS the cross-path equality; the scalar twins
// are hashed too and must give the same constants. (The constants date from when each path was a
// separate build: the same bits then as now.)
//
// Inputs come only from testing::Rng's Uniform (exact multiples of 2^-24, then exact scalings or
// one fma), never from libm or <random>, so they are the same bits everywhere.
//
// Regenerating (only after an intended change of some kernel's arithmetic, which also changes the
// bits every result file records): build the release preset, run on an AVX-512 machine
//   build/release/tests/kvaudit_unit_tests --gtest_filter='CrossBuildBits.*'
// and copy the `{"name", 0x...},` lines that the failures print into kExpected.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "kv/attention/f32_attention.h"
#include "ops/hadamard.h"
#include "kv/formats/asym_group_quant.h"
#include "kv/llamacpp/flash_attn.h"
#include "kv/store/kivi_kernels.h"
#include "ops/activation.h"
#include "ops/dot.h"
#include "ops/ggml/vec_dot.h"
#include "ops/matmul.h"
#include "support/random_rows.h"
#include "unit/kv_codec_checks.h"
#include "unit/ops_test_inputs.h"

namespace kvaudit {
namespace {

using testing::UniformRows;

// FNV-1a over the bytes of every value added.
class BitHash {
 public:
  void Add(const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < bytes; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ULL;
  }
  template <class T>
  void Add(const std::vector<T>& v) {
    Add(v.data(), v.size() * sizeof(T));
  }
  void Add(float f) { Add(&f, sizeof f); }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// Computed in the AVX-512 (release) build; see the file comment.
const std::map<std::string, uint64_t> kExpected = {
    {"activation", 0x50a1bc656b9ad4feULL},
    {"bf16/g32/n128", 0xe426d5d58f4db3bcULL},
    {"bf16/g32/n8", 0x37aab601c71065b3ULL},
    {"dot_f32", 0x20aa1f5a3cdd90d1ULL},
    {"f16/g32/n128", 0x6e11e4857a1efc9cULL},
    {"f16/g32/n8", 0xc70665cfd4fd2904ULL},
    {"f32/g32/n128", 0xd31adfae3363f1f7ULL},
    {"f32/g32/n8", 0xd5ad2aa08655c584ULL},
    {"f32_attention", 0x71f274090c34613eULL},
    {"fp8_e4m3/g32/n128", 0xee1dccb40bfda338ULL},
    {"fp8_e4m3/g32/n8", 0x473e6049e73accd2ULL},
    {"fp8_e4m3_dynamic/g32/n256", 0xa5b5b51b861e727eULL},
    {"fp8_e4m3_dynamic/g32/n32", 0x454ebf6b9322fcb9ULL},
    {"fp8_e5m2/g32/n128", 0x6cc955bb17f21a3bULL},
    {"fp8_e5m2/g32/n8", 0x5bcc33ed97f91bacULL},
    {"fp8_e5m2_dynamic/g32/n256", 0x1b4212d7aff404c9ULL},
    {"fp8_e5m2_dynamic/g32/n32", 0x4d9b7bcd1b98fcd7ULL},
    {"hadamard/128", 0x57da1947722f5235ULL},
    {"hadamard/16", 0xeb8c5ac05bdf6be1ULL},
    {"hadamard/2", 0x2284044309a5f9eeULL},
    {"hadamard/256", 0xb9c3d21e39108435ULL},
    {"hadamard/64", 0x2abc3326fd6f3cf6ULL},
    {"int4/g16/n192", 0xb971044d22991f59ULL},
    {"int4/g16/n64", 0x275dc31f32151dd0ULL},
    {"int4/g32/n192", 0xd046eeb7e5a4195eULL},
    {"int4/g32/n64", 0xb2427d1af6cde88fULL},
    {"int4/g64/n192", 0xf3fe859b46bbec03ULL},
    {"int4/g64/n64", 0x1b0b0bd29424e102ULL},
    {"int4/g8/n192", 0xdae6cac845b6b3b8ULL},
    {"int4/g8/n64", 0xf0be30a82a094835ULL},
    {"int4/g96/n192", 0x5ca27e46858ff6cdULL},
    {"int4/g96/n96", 0x3ed418e5cfa68b79ULL},
    {"int8/g16/n192", 0x6946734b5bcd8804ULL},
    {"int8/g16/n64", 0xb932960ed2ad15f2ULL},
    {"int8/g32/n192", 0xce6a9695f09e9692ULL},
    {"int8/g32/n64", 0xfb949ee27c9ba1afULL},
    {"int8/g64/n192", 0xd3ef619fbac39cc5ULL},
    {"int8/g64/n64", 0x534a3f2fd53e3dd5ULL},
    {"int8/g8/n192", 0x6673b0361b195626ULL},
    {"int8/g8/n64", 0xebc229842a42fed4ULL},
    {"int8/g96/n192", 0x02b644765716b53cULL},
    {"int8/g96/n96", 0xefd73ac6f1e7961bULL},
    {"iq4_nl/g32/n256", 0x0927cf73bb4f14ecULL},
    {"iq4_nl/g32/n32", 0x67a4d221a2e2cd8bULL},
    {"kivi/hd128/G32/b2", 0xf821d2e4f4f8cb54ULL},
    {"kivi/hd128/G32/b4", 0x8d7fb18947e7718aULL},
    {"kivi/hd64/G8/b2", 0xa7549cb817c7dcc8ULL},
    {"kivi/hd64/G8/b4", 0x2fa6d70d2095655aULL},
    {"kivi/hd96/G48/b2", 0xabb1e20593510039ULL},
    {"kivi/hd96/G48/b4", 0xdc087f596bd15e52ULL},
    {"llamacpp", 0x11b9257f431eef02ULL},
    {"matmul/bf16", 0x36ba62f80308839eULL},
    {"matmul/f16", 0x2361550ce2579c08ULL},
    {"matmul/f32", 0xa970790d833995eeULL},
    {"q4_0/g32/n256", 0x8944029d781c9f84ULL},
    {"q8_KV/g32/n32", 0xdc52ffc76f4ea8adULL},
    {"q8_KV/g32/n256", 0xc75fe647ed861be7ULL},
    {"turboquant_mse4/g32/n32", 0x34d086406aa96208ULL},
    {"turboquant_mse4/g32/n256", 0xdadf5599f5982fb4ULL},
    {"turboquant_mse3/g32/n32", 0xf4cbd79bbdde671aULL},
    {"turboquant_mse3/g32/n256", 0x01abd5c5afd7252dULL},
    {"turboquant_uniform4/g32/n32", 0xea10b424c3822bf7ULL},
    {"turboquant_uniform4/g32/n256", 0x75f5214e5cab34c3ULL},
    {"turboquant_uniform3/g32/n32", 0x6592a5ac0bc3443eULL},
    {"turboquant_uniform3/g32/n256", 0x1c2a9308b0f05986ULL},
    {"nvfp4_4over6/g32/n32", 0x978c2ba286235de4ULL},
    {"nvfp4_4over6/g32/n256", 0xd8064cf0bf2ac847ULL},
    {"nvfp4/g32/n32", 0xe95a8be4521a8e70ULL},
    {"nvfp4/g32/n256", 0x40add84654d1e67cULL},
    {"int8_per_token_head/g32/n8", 0xe53dae212af7e25eULL},
    {"int8_per_token_head/g32/n128", 0x74136c26ba65ad02ULL},
    {"fp8_per_token_head/g32/n8", 0x2bd079237017f484ULL},
    {"fp8_per_token_head/g32/n128", 0x58dd661debbd2b72ULL},
    {"fp4_mx_block16/g32/n32", 0xbc6cf0c5f21e6022ULL},
    {"fp4_mx_block16/g32/n256", 0x5e3e237ed3adb751ULL},
    {"q4_0/g32/n32", 0x01dff7767abb04e0ULL},
    {"q4_1/g32/n256", 0x28c16dae6d98a976ULL},
    {"q4_1/g32/n32", 0x3717fc5ee9ac0189ULL},
    {"q5_0/g32/n256", 0xdcbfb22a1abbd237ULL},
    {"q5_0/g32/n32", 0x71c489f019267d32ULL},
    {"q5_1/g32/n256", 0x421950c15ed38dadULL},
    {"q5_1/g32/n32", 0x611895b8a104faecULL},
    {"q8_0/g32/n256", 0x766bb079508c289bULL},
    {"q8_0/g32/n32", 0x0ffc794650baa349ULL},
    {"softmax", 0x0e966282d3033ad1ULL},
};

void ExpectHash(const std::string& name, const BitHash& h) {
  char line[96];
  std::snprintf(line, sizeof line, "{\"%s\", 0x%016llxULL},", name.c_str(), static_cast<unsigned long long>(h.value()));
  const auto it = kExpected.find(name);
  ASSERT_NE(it, kExpected.end()) << "no committed hash; add: " << line;
  EXPECT_EQ(it->second, h.value()) << name << ": the bits differ from the committed ones; got " << line;
}

// [rows, n] inputs in [-1, 1) with channel 3 of every row 32× larger (an outlier channel, so the
// block scales of the quantizers vary); exact values.
std::vector<float> Rows(int64_t rows, int64_t n, uint64_t seed) {
  std::vector<float> x = UniformRows(rows, n, seed);
  for (int64_t r = 0; r < rows; ++r) x[static_cast<size_t>(r * n + 3 % n)] *= 32.0f;
  return x;
}

// One codec's quantize, dequantize, dot, axpy, dot_rows and axpy_rows on [7, n] rows.
BitHash CodecBits(const RowCodec& c, const CodecParams& p, int n) {
  constexpr int kRows = 7, kQ = 3;
  const std::vector<float> x = Rows(kRows, n, 100 + n), q = UniformRows(kQ, n, 200 + n);
  const std::vector<float> w = UniformRows(kQ, kRows, 300 + n, 0.0f, 1.0f);
  const uint64_t rb = c.row_bytes(n, p);
  std::vector<uint8_t> packed(rb * kRows);  // [kRows, rb]
  std::vector<float> y(static_cast<size_t>(kRows) * n);
  for (int r = 0; r < kRows; ++r) {
    c.quantize(x.data() + r * n, packed.data() + rb * r, n, p);
    c.dequantize(packed.data() + rb * r, y.data() + r * n, n, p);
  }
  BitHash h;
  h.Add(packed);
  h.Add(y);
  std::vector<float> acc = UniformRows(1, n, 400 + n);  // [n]
  for (int r = 0; r < kRows; ++r) {
    h.Add(c.dot(packed.data() + rb * r, q.data(), n, p));
    c.axpy(packed.data() + rb * r, w[r], acc.data(), n, p);
  }
  h.Add(acc);
  std::vector<float> out(static_cast<size_t>(kQ) * kRows);  // [kQ, kRows]
  std::vector<float> accs = UniformRows(kQ, n, 500 + n);    // [kQ, n]
  c.dot_rows(packed.data(), rb, kRows, q.data(), n, kQ, n, out.data(), kRows, p);
  c.axpy_rows(packed.data(), rb, kRows, w.data(), kRows, kQ, accs.data(), n, n, p);
  h.Add(out);
  h.Add(accs);
  return h;
}

TEST(CrossBuildBits, RowCodecs) {
  for (const codec_checks::Case& c : codec_checks::AllCodecs()) {
    for (int n : {c.lengths.front(), c.lengths.back()}) {
      const std::string name =
          std::string(c.simd->name) + "/g" + std::to_string(c.params.group) + "/n" + std::to_string(n);
      ExpectHash(name, CodecBits(*c.simd, c.params, n));
      ExpectHash(name, CodecBits(*c.ref, c.params, n));  // the twin: the same bits
    }
  }
}

TEST(CrossBuildBits, MatMulAndDots) {
  constexpr int kIn = 100, kOut = 37, kN = 5;  // tails in both the 16-lane k loop and the row tiles
  const std::vector<float> x = UniformRows(kN, kIn, 1);
  ThreadPool pool(2);
  for (QuantType t : testing::kQuantTypes) {
    const WeightMatrix w = testing::WeightsFrom(kOut, kIn, t, UniformRows(kOut, kIn, 2));
    std::vector<float> y(kN * kOut), gemv(kOut), canon(kN * kOut);
    MatMul(x.data(), kN, w.view(), y.data(), pool);
    MatMul(x.data(), 1, w.view(), gemv.data(), pool);
    MatMulCanonicalRef(x.data(), kN, w.view(), canon.data());
    BitHash h, hc;
    h.Add(y);
    h.Add(gemv);
    hc.Add(canon);
    hc.Add(std::vector<float>(canon.begin(), canon.begin() + kOut));  // row 0 = the gemv
    ExpectHash(std::string("matmul/") + QuantTypeName(t), h);
    ExpectHash(std::string("matmul/") + QuantTypeName(t), hc);
  }
  BitHash dots, dots_ref;
  for (int n : {1, 7, 16, 33, 100}) {
    const std::vector<float> a = UniformRows(1, n, 3 + n), rows = UniformRows(19, n, 4 + n);
    std::vector<float> out(19);
    DotRowsF32(a.data(), rows.data(), n, 19, n, out.data());
    dots.Add(out);
    for (int j = 0; j < 19; ++j) dots_ref.Add(DotCanonicalScalar(a.data(), rows.data() + j * n, n));
    dots.Add(DotF32(a.data(), rows.data(), n));
    dots_ref.Add(DotCanonicalScalar(a.data(), rows.data(), n));
  }
  ExpectHash("dot_f32", dots);
  ExpectHash("dot_f32", dots_ref);
}

// Exp past both of its clamps, SiluMul, and the softmax pieces attention uses.
BitHash ActivationBits(bool twins) {
  BitHash h;
  std::vector<float> x = UniformRows(1, 3000, 5, -110.0f, 95.0f);  // past both clamps of the exp
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(n), up = UniformRows(1, n, 6);
  (twins ? ExpScalar : Exp)(x.data(), y.data(), n);
  h.Add(y);
  const std::vector<float> g = UniformRows(1, n, 7, -20.0f, 20.0f);
  (twins ? SiluMulScalar : SiluMul)(g.data(), up.data(), y.data(), n);
  h.Add(y);
  for (int len : {1, 15, 16, 29, 256}) {
    std::vector<float> s = UniformRows(1, len, 8 + len, -30.0f, 30.0f);
    const float m = (twins ? MaxOfScalar : MaxOf)(s.data(), len);
    h.Add(m);
    h.Add((twins ? ExpSubSumScalar : ExpSubSum)(s.data(), len, m));
    h.Add(s);
  }
  return h;
}

TEST(CrossBuildBits, ExpAndSoftmaxPieces) {
  ExpectHash("activation", ActivationBits(false));
  ExpectHash("activation", ActivationBits(true));
  std::vector<float> s = UniformRows(1, 300, 9, -30.0f, 30.0f);
  Softmax(s.data(), static_cast<int64_t>(s.size()));
  BitHash h;
  h.Add(s);
  ExpectHash("softmax", h);
}

TEST(CrossBuildBits, HadamardRotation) {
  for (int block : {2, 16, 64, 128, 256}) {
    std::vector<float> a = Rows(3, 512, 10 + block), b = a;
    HadamardRows(a.data(), 3, 512, block);
    HadamardRowsRef(b.data(), 3, 512, block);
    BitHash ha, hb;
    ha.Add(a);
    hb.Add(b);
    ExpectHash("hadamard/" + std::to_string(block), ha);
    ExpectHash("hadamard/" + std::to_string(block), hb);
  }
}

// F32 attention chunks (the f32 cache): scores, softmax pieces and the weighted value sum.
TEST(CrossBuildBits, F32AttentionChunk) {
  const AttnShape s{64, 2, 0, 0.125f};
  constexpr int kKeys = 300, kTok = 3, kPos0 = 297, kRows = kTok * 2;
  const std::vector<float> k = UniformRows(kKeys, 64, 11), v = UniformRows(kKeys, 64, 12);
  const std::vector<float> q = UniformRows(kRows, 64, 13);
  BitHash h1, h2;
  for (auto [k0, k1] : {std::pair{0, 256}, std::pair{256, 300}}) {
    std::vector<float> o1(q.size()), o2(q.size()), sc1(k1 - k0), sc2(2 * (k1 - k0));
    std::vector<PartialRow> p1(kRows), p2(kRows);
    const float* kc = k.data() + static_cast<int64_t>(k0) * 64;  // the chunk's rows, from k0
    const float* vc = v.data() + static_cast<int64_t>(k0) * 64;
    AttendChunk(s, q.data(), kTok, kPos0, kc, vc, k0, k1, o1.data(), p1.data(), sc1.data());
    AttendChunkGrouped(s, q.data(), kTok, kPos0, kc, vc, k0, k1, o2.data(), p2.data(), sc2.data());
    h1.Add(o1);
    h1.Add(p1);
    h2.Add(o2);
    h2.Add(p2);
  }
  ExpectHash("f32_attention", h1);
  ExpectHash("f32_attention", h2);  // the grouped form: the same bits
}

// KIVI packed groups: codes uniform bytes, f16 (scale, min) pairs from exact uniforms.
TEST(CrossBuildBits, KiviKernels) {
  for (auto [hd, G] : {std::pair{128, 32}, std::pair{96, 48}, std::pair{64, 8}}) {
    for (int bits : {2, 4}) {
      const int64_t cb = AsymCodeBytes(G, bits);
      const std::string name = "kivi/hd" + std::to_string(hd) + "/G" + std::to_string(G) + "/b" + std::to_string(bits);
      constexpr int kQ = 5, kRows = 9;
      const int ng = hd / G;
      const std::vector<uint8_t> kcodes = testing::RandomBytes(hd * cb, 14);          // [hd][cb]
      const std::vector<uint8_t> vcodes = testing::RandomBytes(kRows * ng * cb, 15);  // [kRows][ng][cb]
      const std::vector<float> sm_f = UniformRows(1, 2 * hd * kRows, 16);
      std::vector<uint16_t> sm(sm_f.size());  // [n][2] (scale >= 0, min)
      for (size_t i = 0; i < sm.size(); ++i) sm[i] = F32ToF16(i % 2 ? sm_f[i] : 0.25f * (sm_f[i] + 1.0f));
      const std::vector<float> q = UniformRows(kQ, hd, 17), w = UniformRows(kQ, kRows, 18);
      BitHash h, hr;
      std::vector<float> out(kQ * G), out_r(kQ * G), acc = UniformRows(kQ, hd, 19), acc_r = acc;
      KiviKeyGroupDot(kcodes.data(), sm.data(), hd, G, bits, q.data(), hd, kQ, 0, G, out.data(), G);
      KiviKeyGroupDotRef(kcodes.data(), sm.data(), hd, G, bits, q.data(), hd, kQ, 0, G, out_r.data(), G);
      KiviValueRowsAxpy(vcodes.data(), sm.data(), kRows, hd, G, bits, w.data(), kRows, kQ, acc.data(), hd);
      KiviValueRowsAxpyRef(vcodes.data(), sm.data(), kRows, hd, G, bits, w.data(), kRows, kQ, acc_r.data(), hd);
      h.Add(out);
      h.Add(acc);
      hr.Add(out_r);
      hr.Add(acc_r);
      ExpectHash(name, h);
      ExpectHash(name, hr);
    }
  }
}

// The llama.cpp emulation's score kernel (its AVX2 branch) and V accumulators, with their twins.
TEST(CrossBuildBits, LlamaCppKernels) {
  using namespace llamacpp;
  constexpr int kHd = 128, kNb = kHd / 32;
  testing::Rng rng(20);
  std::vector<int8_t> kc(kHd), qc(kHd);
  for (int8_t& c : kc) c = static_cast<int8_t>(static_cast<int>(rng.Below(255)) - 127);  // ±127: maddubs' range
  for (int8_t& c : qc) c = static_cast<int8_t>(static_cast<int>(rng.Below(255)) - 127);
  std::vector<float> kd(kNb), km(kNb), qd(kNb), qm(kNb);
  for (int b = 0; b < kNb; ++b) {
    kd[b] = F16ToF32(F32ToF16(rng.Uniform() * 0.0625f));
    km[b] = F16ToF32(F32ToF16(rng.Uniform(-1.0f, 1.0f)));
    qd[b] = F16ToF32(F32ToF16(rng.Uniform() * 0.0625f));
    qm[b] = F16ToF32(F32ToF16(rng.Uniform(-1.0f, 1.0f)));
  }
  BitHash h, hr;
  for (ggml::VecDotKind kind : {ggml::VecDotKind::kSym, ggml::VecDotKind::kAffine, ggml::VecDotKind::kIq4Nl}) {
    for (int nb : {kNb, kNb - 1}) {  // odd iq4_nl block count: the scalar tail
      h.Add(ggml::DotQ8Blocks(kind, kc.data(), kd.data(), km.data(), qc.data(), qd.data(), qm.data(), nb));
      hr.Add(ggml::DotQ8BlocksScalar(kind, kc.data(), kd.data(), km.data(), qc.data(), qd.data(), qm.data(), nb));
    }
  }
  std::vector<float> v = UniformRows(1, kHd, 21), a = UniformRows(1, kHd, 22), b = a;
  RoundToF16(v.data(), kHd);
  RoundToF16(a.data(), kHd);
  RoundToF16(b.data(), kHd);
  MadF16(a.data(), v.data(), 0.75f, kHd);
  MadF16Scalar(b.data(), v.data(), 0.75f, kHd);
  ScaleF16(a.data(), 0.3f, kHd);
  ScaleF16Scalar(b.data(), 0.3f, kHd);
  MadF32(a.data(), v.data(), 1.5f, kHd);
  MadF32Scalar(b.data(), v.data(), 1.5f, kHd);
  ScaleF32(a.data(), 0.7f, kHd);
  ScaleF32Scalar(b.data(), 0.7f, kHd);
  h.Add(a);
  hr.Add(b);
  const float dot = ggml::VecDotF16(ggml::kEmulatedBuild, v.data(), a.data(), kHd);
  h.Add(dot);
  hr.Add(dot);
  ExpectHash("llamacpp", h);
  ExpectHash("llamacpp", hr);
}

}  // namespace
}  // namespace kvaudit
