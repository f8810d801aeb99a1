// Q -> q8_0/q8_1 conversion of llama.cpp's CPU flash attention and ggml's integer dot products.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "base/isa.h"
#include "kv/formats/ggml_block_codecs.h"
#include "quant/ggml_blocks.h"
#include "quant/q8_activation.h"
#include "support/random_rows.h"
#include "unit/kv_block_test_util.h"

namespace kvaudit {
namespace {

struct ActGolden {
  const char* name;
  float x[32];
  const char* q8_0_x86;  // ggml-cpu/arch/x86/quants.c quantize_row_q8_0
  const char* q8_1_ref;  // ggml-quants.c quantize_row_q8_1_ref
  const char* q8_1_x86;  // ggml-cpu/arch/x86/quants.c quantize_row_q8_1
};

// Expected bytes were computed once by an independent Python float32 re-implementation (every
// + - * / rounded to f32 via struct.pack('f'); fp16 via struct.pack('e'), RNE, overflow -> inf):
// ref: d = amax/127, id = 1/d, q = roundf (half away from zero); x86: id = 127/amax, q = round
// half to even (Python round); q8_1 s = fp16(float(Σq)·d). "id_differs" is a random block where
// 127/amax and 1/(amax/127) round one element differently (not at a .5 input).
const ActGolden kGolden[] = {
    {"ties",
     {127.0f, 0.5f,   1.5f,  2.5f,  -0.5f, -1.5f, -2.5f, 3.5f,  126.5f, -126.5f, 63.5f,
      -63.5f, -10.5f, -9.5f, -8.5f, -7.5f, -6.5f, -5.5f, -4.5f, -3.5f,  -2.5f,   -1.5f,
      -0.5f,  0.5f,   1.5f,  2.5f,  3.5f,  4.5f,  5.5f,  6.5f,  7.5f,   8.5f},
     "003c7f00020200fefe047e8240c0f6f6f8f8fafafcfcfefe00000202040406060808",
     "003ce0567f010203fffefd047f8140c0f5f6f7f8f9fafbfcfdfeff010203040506070809",
     "003cf0567f00020200fefe047e8240c0f6f6f8f8fafafcfcfefe00000202040406060808"},
    {"zeros",
     {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
      0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
     "00000000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000000000000000000000000000000000000000000000000000"},
    {"all_equal",
     {0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f},
     "d6187f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
     "d618cd487f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
     "d618cd487f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f"},
    {"fp16_limits",
     {65504.0f, -65504.0f, -15000.0f, -14000.0f, -13000.0f, -12000.0f, -11000.0f, -10000.0f,
      -9000.0f, -8000.0f,  -7000.0f,  -6000.0f,  -5000.0f,  -4000.0f,  -3000.0f,  -2000.0f,
      -1000.0f, 0.0f,      1000.0f,   2000.0f,   3000.0f,   4000.0f,   5000.0f,   6000.0f,
      7000.0f,  8000.0f,   9000.0f,   10000.0f,  11000.0f,  12000.0f,  13000.0f,  14000.0f},
     "08607f81e3e5e7e9ebedeff0f2f4f6f8fafcfe00020406080a0c0e1011131517191b",
     "08604ef37f81e3e5e7e9ebedeff0f2f4f6f8fafcfe00020406080a0c0e1011131517191b",
     "08604ef37f81e3e5e7e9ebedeff0f2f4f6f8fafcfe00020406080a0c0e1011131517191b"},
    {"tiny_scale",
     {-9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f},
     "010081abd6002a557f81abd6002a557f81abd6002a557f81abd6002a557f81abd600",
     "0100508181abd6002a557f81abd6002a557f81abd6002a557f81abd6002a557f81abd600",
     "0100508181abd6002a557f81abd6002a557f81abd6002a557f81abd6002a557f81abd600"},
    {"tinier_scale",
     {-1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f},
     "000081c000407f81c000407f81c000407f81c000407f81c000407f81c000407f81c0",
     "0000328081c1003f7f81c1003f7f81c1003f7f81c1003f7f81c1003f7f81c1003f7f81c1",
     "0000328081c000407f81c000407f81c000407f81c000407f81c000407f81c000407f81c0"},
    {"max_negative",
     {-3.0f,         -1.33755004f,  -1.07621002f,  -0.0316600017f, 0.568910003f, -0.396670014f, -1.96155f,
      -0.368149996f, 0.625590026f,  -0.94066f,     -1.93548f,      0.227379993f, 0.225280002f,  -0.53008002f,
      0.656340003f,  -0.508220017f, -0.377759993f, 0.872619987f,   0.172250003f, 0.0801199973f, 0.84266001f,
      -0.591329992f, 0.349350005f,  1.37560999f,   -0.228880003f,  -0.12032f,    -0.961049974f, 1.75873005f,
      -0.754390001f, 0.0338199995f, 1.57495999f,   1.22500002f},
     "0c2681c7d2ff18efadf01ad8ae0a0aea1ceaf025070324e70f3af6fbd74ae0014334",
     "0c2695c481c7d2ff18efadf01ad8ae0a0aea1ceaf025070324e70f3af6fbd74ae0014334",
     "0c2695c481c7d2ff18efadf01ad8ae0a0aea1ceaf025070324e70f3af6fbd74ae0014334"},
    {"max_positive",
     {3.0f,          -0.440369993f, -0.667689979f, 0.707710028f,  0.62221998f,  -1.06813002f,  1.39842999f,
      -0.603600025f, 0.6153f,       -1.34666002f,  -0.636160016f, 0.627089977f, 1.49830997f,   -0.394080013f,
      -0.372119993f, 0.248779997f,  -1.36810994f,  0.808130026f,  -1.00309002f, 1.79358995f,   1.01155996f,
      0.908789992f,  -0.144480005f, -0.32822001f,  -0.793340027f, -1.26011002f, -0.363599986f, -1.56851995f,
      -0.803049982f, -2.59678006f,  0.768779993f,  -0.472449988f},
     "0c267fede41e1ad33be61ac7e51b3feff00bc622d64c2b26faf2decbf1bede9221ec",
     "0c2671c07fede41e1ad33be61ac7e51b3feff00bc622d64c2b26faf2decbf1bede9221ec",
     "0c2671c07fede41e1ad33be61ac7e51b3feff00bc622d64c2b26faf2decbf1bede9221ec"},
    {"random",
     {-1.65465999f,   -0.447030008f, 0.00696999999f, 0.660589993f, 0.154420003f,  -1.11611998f,  -0.191080004f,
      0.09595f,       0.162829995f,  -1.54867005f,   0.893270016f, -0.730610013f, 0.827409983f,  -0.871850014f,
      -0.0783500001f, 0.976409972f,  -0.93554002f,   0.279300004f, -0.218950003f, -0.202150002f, 0.38409999f,
      -0.471520007f,  -0.630259991f, 0.254579991f,   0.437449992f, 0.233429998f,  -1.98791003f,  0.0862800032f,
      -0.160779998f,  -0.41881001f,  -0.0527600013f, 0.235699996f},
     "022496e3002a0ab9f4060a9d39d135c8fb3ec412f2f319e2d8101c0f8106f6e5fd0f",
     "02240bc696e3002a0ab9f4060a9d39d135c8fb3ec412f2f319e2d8101c0f8106f6e5fd0f",
     "02240bc696e3002a0ab9f4060a9d39d135c8fb3ec412f2f319e2d8101c0f8106f6e5fd0f"},
    {"id_differs",
     {0.915000021f,   -0.68599999f,  -0.256500006f, 0.843800008f,  -0.99059999f, 0.398799986f, -0.0800999999f,
      0.57889998f,    0.883599997f,  -0.812099993f, -0.666599989f, 0.726700008f, 0.208000004f, -0.940400004f,
      -0.756200016f,  -0.904799998f, -0.465299994f, 0.444400012f,  -0.72359997f, 0.495599985f, -0.131799996f,
      0.300300002f,   0.434399992f,  0.573700011f,  0.74849999f,   0.788900018f, 0.343600005f, 0.926199973f,
      -0.0969000012f, 0.0785999969f, -0.811200023f, 0.599099994f},
     "fd1f75a8df6c8133f64a7198ab5d1b879f8cc439a340ef26384a60652c77f40a984d",
     "fd1fe53f75a8df6c8133f64a7198ab5d1b879f8cc439a340ef27384a60652c77f40a984d",
     "fd1fdd3f75a8df6c8133f64a7198ab5d1b879f8cc439a340ef26384a60652c77f40a984d"},
};

TEST(KvQ8Activation, BlocksMatchLlamaCpp) {
  for (const ActGolden& g : kGolden) {
    uint8_t q80[34], q81[36], codec[34];  // one block each
    QuantizeQ8_0RowX86(g.x, q80, 32);
    EXPECT_EQ(block_test::ToHex(q80, 34), g.q8_0_x86) << g.name;
    QuantizeQ8_1RowRef(g.x, q81, 32);
    EXPECT_EQ(block_test::ToHex(q81, 36), g.q8_1_ref) << g.name;
    QuantizeQ8_1RowX86(g.x, q81, 32);
    EXPECT_EQ(block_test::ToHex(q81, 36), g.q8_1_x86) << g.name;
    // The _ref q8_0 is the cache codec's quantizer (its own golden test pins the bytes).
    QuantizeQ8_0RowRef(g.x, q80, 32);
    Q8_0Codec().quantize(g.x, codec, 32, CodecParams{});
    EXPECT_EQ(block_test::ToHex(q80, 34), block_test::ToHex(codec, 34)) << g.name;
  }
  // The FA path on x86 uses the x86 conversion.
  uint8_t a[34], b[34];
  QuantizeQ8_0Row(kGolden[0].x, a, 32);
  QuantizeQ8_0RowX86(kGolden[0].x, b, 32);
  EXPECT_EQ(block_test::ToHex(a, 34), block_test::ToHex(b, 34));
}

// Dequantized f32 values of a q8 row: q·fp16(d); also returns per-block fp16(s) - d·Σq for q8_1.
std::vector<float> DequantQ8(const std::vector<uint8_t>& row, int64_t n, bool q8_1, std::vector<double>* s_err) {
  const int bytes = q8_1 ? 36 : 34, off = q8_1 ? 4 : 2;
  std::vector<float> v(n);  // [n]
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = row.data() + b * bytes;
    const float d = F16ToF32(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
    double sum = 0;
    for (int j = 0; j < 32; ++j) {
      v[b * 32 + j] = static_cast<float>(static_cast<int8_t>(blk[off + j])) * d;
      sum += static_cast<int8_t>(blk[off + j]);
    }
    if (q8_1) s_err->push_back(F16ToF32(static_cast<uint16_t>(blk[2] | (blk[3] << 8))) - d * sum);
  }
  return v;
}

struct DotCase {
  const RowCodec& codec;
  float (*vec_dot)(const uint8_t*, const uint8_t*, int64_t);
  bool q8_1;
};

// VecDot* == Σ dequant(K)·dequant(Q) within 1e-6 of Σ|terms|. For q8_1 llama.cpp uses the stored
// fp16 s = fp16(d·Σq) for the m term, so the reference adds m_x·(s - d·Σq) per block.
TEST(KvQ8Activation, VecDotMatchesDequantizedDot) {
  const DotCase cases[] = {{Q4_0Codec(), VecDotQ4_0Q8_0, false}, {Q4_1Codec(), VecDotQ4_1Q8_1, true},
                           {Q5_0Codec(), VecDotQ5_0Q8_0, false}, {Q5_1Codec(), VecDotQ5_1Q8_1, true},
                           {Q8_0Codec(), VecDotQ8_0Q8_0, false}, {Iq4NlCodec(), VecDotIq4NlQ8_0, false}};
  uint32_t seed = 100;
  for (const DotCase& c : cases) {
    for (int dim : {32, 64, 128}) {
      for (int rep = 0; rep < 10; ++rep) {
        const std::vector<float> k =
            rep % 3 == 2 ? block_test::GaussianWithOutliers(1, dim, seed++) : block_test::Gaussian(dim, seed++);
        const std::vector<float> q = block_test::Gaussian(dim, seed++, 2.0f);
        std::vector<uint8_t> kq(c.codec.row_bytes(dim, CodecParams{}));           // [row_bytes]
        std::vector<uint8_t> qq(c.q8_1 ? Q8_1RowBytes(dim) : Q8_0RowBytes(dim));  // [n/32 blocks]
        c.codec.quantize(k.data(), kq.data(), dim, CodecParams{});
        if (c.q8_1)
          QuantizeQ8_1Row(q.data(), qq.data(), dim);
        else
          QuantizeQ8_0Row(q.data(), qq.data(), dim);
        std::vector<float> kv(dim);  // [dim]
        c.codec.dequantize(kq.data(), kv.data(), dim, CodecParams{});
        std::vector<double> s_err;
        const std::vector<float> qv = DequantQ8(qq, dim, c.q8_1, &s_err);
        double ref = 0, scale = 0;
        for (int i = 0; i < dim; ++i) {
          ref += static_cast<double>(kv[i]) * qv[i];
          scale += std::fabs(static_cast<double>(kv[i]) * qv[i]);
        }
        for (size_t b = 0; b < s_err.size(); ++b) {  // m_x is the block's second fp16 (q4_1/q5_1)
          const uint8_t* blk = kq.data() + b * (c.codec.row_bytes(32, CodecParams{}));
          const double m = F16ToF32(static_cast<uint16_t>(blk[2] | (blk[3] << 8)));
          ref += m * s_err[b];
          scale += std::fabs(m * s_err[b]);
        }
        EXPECT_NEAR(c.vec_dot(kq.data(), qq.data(), dim), ref, 1e-6 * scale)
            << c.codec.name << " dim " << dim << " rep " << rep;
      }
    }
  }
}

}  // namespace
}  // namespace kvaudit

namespace kvaudit {
namespace {

// RoundHalfEven (the quantizers' rounding without a libm call) is nearbyint in the default rounding
// mode, bit for bit: every float bit pattern at a stride co-prime to 2^32, every half-integer and
// its neighbours below 1024 in magnitude (the ties), signed zeros, the 2^23 edge, infinities, NaN.
TEST(QuantRounding, RoundHalfEvenIsNearbyintBitForBit) {
  auto same = [](float v) {
    const float want = std::nearbyint(v), got = ggml::RoundHalfEven(v);
    if (std::isnan(want)) return std::isnan(got);
    return std::memcmp(&want, &got, sizeof want) == 0;
  };
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 7919) {
    float v;
    const uint32_t b32 = static_cast<uint32_t>(bits);
    std::memcpy(&v, &b32, sizeof v);
    ASSERT_TRUE(same(v)) << "bits " << b32;
  }
  for (int i = -2048; i <= 2048; ++i) {
    const float tie = 0.5f * static_cast<float>(i);
    for (float v : {tie, std::nextafter(tie, -INFINITY), std::nextafter(tie, INFINITY)}) ASSERT_TRUE(same(v)) << v;
  }
  for (float v : {0.0f, -0.0f, 8388607.5f, -8388607.5f, 8388608.0f, 4194304.5f, INFINITY, -INFINITY, NAN})
    ASSERT_TRUE(same(v)) << v;
}

// The activation quantizer on every kernel path against its scalar twin, bit for bit: 20,000
// blocks of normal values at scales from 2^-30 to 2^30, ties (x·127/amax at .5), zeros,
// subnormals, and NaN / ±inf at random places (where the instructions' rules decide: MAXPS's
// second operand, cvtps2dq's INT32_MIN, the packs' saturation), q8_0 and q8_1.
TEST(KvQ8Activation, X86CodesAreTheirScalarTwinBitForBitOnEveryPath) {
  const float kSpecial[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-45f, 65504.0f, 3e38f};
  ForEachSupportedIsa([&](Isa isa) {
    SCOPED_TRACE(IsaName(isa));
    testing::Rng rng(808);
    for (int trial = 0; trial < 2500; ++trial) {
      const int64_t nb = 8, n = nb * 32;
      std::vector<float> x(static_cast<size_t>(n));  // [n]
      const float scale = std::ldexp(1.0f, static_cast<int>(rng.Below(61)) - 30);
      for (float& v : x) v = rng.Normal(scale);
      if (trial % 3 == 0) {  // a block of ties: amax 127 · 2^e, the rest at k + 0.5 times 2^e
        for (int j = 0; j < 32; ++j) x[j] = std::ldexp(j == 0 ? 127.0f : static_cast<float>(j) - 15.5f, trial % 7);
      }
      for (int k = static_cast<int>(rng.Below(4)); k > 0; --k) {
        x[rng.Below(static_cast<uint32_t>(n))] = kSpecial[rng.Below(sizeof(kSpecial) / sizeof(float))];
      }
      for (bool q8_1 : {false, true}) {
        std::vector<int8_t> c(static_cast<size_t>(n)), cs(c.size());        // [n] codes
        std::vector<float> d(static_cast<size_t>(nb)), m(d), ds(d), ms(d);  // [nb]
        m.assign(m.size(), 7.0f), ms = m;                                   // q8_0 leaves m as it is
        QuantizeQ8RowX86Codes(x.data(), n, q8_1, {c.data(), d.data(), m.data()});
        QuantizeQ8RowX86CodesScalar(x.data(), n, q8_1, {cs.data(), ds.data(), ms.data()});
        ASSERT_EQ(c, cs) << "trial " << trial << " q8_1 " << q8_1;
        ASSERT_EQ(0, std::memcmp(d.data(), ds.data(), d.size() * 4)) << "trial " << trial;
        ASSERT_EQ(0, std::memcmp(m.data(), ms.data(), m.size() * 4)) << "trial " << trial;
      }
    }
  });
}

// The instructions' rules where the C reference would differ: a NaN at lane 0 loses to the
// other lanes in MAXPS (the second operand wins an unordered pair) but the product NaN·id packs
// to -128; an inf makes amax inf, id 0, and inf·0 = NaN there (-128), 0 elsewhere.
TEST(KvQ8Activation, X86CodesFollowTheInstructionsOnNanAndInf) {
  float x[32];  // [32]
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j) - 16.0f;
  x[0] = NAN;
  int8_t c[32];
  float d = 0, m = 0;
  QuantizeQ8RowX86CodesScalar(x, 32, false, {c, &d, &m});
  EXPECT_EQ(c[0], -128);
  EXPECT_EQ(d, F16ToF32(F32ToF16(15.0f / 127.f)));  // amax 15 from lane 1 (|-15|): the NaN lost
  EXPECT_EQ(c[1], -127);
  x[0] = 0.0f, x[5] = INFINITY;
  QuantizeQ8RowX86CodesScalar(x, 32, false, {c, &d, &m});
  EXPECT_EQ(c[5], -128);
  EXPECT_EQ(c[6], 0);
  EXPECT_TRUE(std::isinf(d));
}

}  // namespace
}  // namespace kvaudit
