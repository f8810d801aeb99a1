// llama.cpp q5_0 KV-cache format: byte-identical blocks, round-trip error bands, layout,
// fused dot/axpy SIMD against the scalar reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "kv/formats/ggml_block_codecs.h"
#include "unit/kv_block_test_util.h"

namespace kvaudit {
namespace {

using block_test::Golden;

// Expected bytes were computed once, independently of this code, by a short Python script that
// re-implements ggml-quants.c quantize_row_q5_0_ref in float32
// semantics: every + - * / rounded to f32 (struct.pack('f')), (int8_t)/(uint8_t) casts truncate,
// roundf = half away from zero, fp16 via struct.pack('e') (round to nearest even, overflow -> inf).
// Cases: .5 ties, all-zero, all-equal, the fp16 limits ±65504, scales that are fp16 subnormals or
// round to zero, the largest |x| negative vs positive, a random block.
const Golden kGolden[] = {
    {"ties",
     {-16.0f, 0.5f,  -0.5f, 14.5f, 15.5f, -15.5f, 8.5f,  -11.5f, -10.5f, -9.5f, -8.5f,
      -7.5f,  -6.5f, -5.5f, -4.5f, -3.5f, -2.5f,  -1.5f, -0.5f,  0.5f,   1.5f,  2.5f,
      3.5f,   4.5f,  5.5f,  6.5f,  7.5f,  8.5f,   9.5f,  10.5f,  11.5f,  12.5f},
     "003c5e00fcffe0f1001f2f31495566778899aabbccdd"},
    {"zeros",
     {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
      0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
     "0080ffffffff00000000000000000000000000000000"},
    {"all_equal",
     {0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f,
      0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f, 0.300000012f},
     "cda40000000000000000000000000000000000000000"},
    {"fp16_limits",
     {65504.0f, -65504.0f, -15000.0f, -14000.0f, -13000.0f, -12000.0f, -11000.0f, -10000.0f,
      -9000.0f, -8000.0f,  -7000.0f,  -6000.0f,  -5000.0f,  -4000.0f,  -3000.0f,  -2000.0f,
      -1000.0f, 0.0f,      1000.0f,   2000.0f,   3000.0f,   4000.0f,   5000.0f,   6000.0f,
      7000.0f,  8000.0f,   9000.0f,   10000.0f,  11000.0f,  12000.0f,  13000.0f,  14000.0f},
     "ffebfeff0f00000f0403f3f3f3f2e2e2e2e1d1d1d1d0"},
    {"tiny_scale",
     {-9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f, 3.33333332e-06f, 6.66666665e-06f, 9.99999975e-06f,
      -9.99999975e-06f, -6.66666665e-06f, -3.33333332e-06f, 0.0f},
     "0a00783c1e8fb0055bb0f50b5fb0055bb0f50b5fb005"},
    {"tinier_scale",
     {-1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f, 0.0f, 9.99999997e-07f, 1.99999999e-06f,
      -1.99999999e-06f, -9.99999997e-07f},
     "02009c73ce39800880f80f800880f80f800880f80f80"},
    {"max_negative",
     {-3.0f,         -1.33755004f,  -1.07621002f,  -0.0316600017f, 0.568910003f, -0.396670014f, -1.96155f,
      -0.368149996f, 0.625590026f,  -0.94066f,     -1.93548f,      0.227379993f, 0.225280002f,  -0.53008002f,
      0.656340003f,  -0.508220017f, -0.377759993f, 0.872619987f,   0.172250003f, 0.0801199973f, 0.84266001f,
      -0.591329992f, 0.349350005f,  1.37560999f,   -0.228880003f,  -0.12032f,    -0.961049974f, 1.75873005f,
      -0.754390001f, 0.0338199995f, 1.57495999f,   1.22500002f},
     "00321859dee8e0591a0043de267ef3fbb691c10d847d"},
    {"max_positive",
     {3.0f,          -0.440369993f, -0.667689979f, 0.707710028f,  0.62221998f,  -1.06813002f,  1.39842999f,
      -0.603600025f, 0.6153f,       -1.34666002f,  -0.636160016f, 0.627089977f, 1.49830997f,   -0.394080013f,
      -0.372119993f, 0.248779997f,  -1.36810994f,  0.808130026f,  -1.00309002f, 1.79358995f,   1.01155996f,
      0.908789992f,  -0.144480005f, -0.32822001f,  -0.793340027f, -1.26011002f, -0.363599986f, -1.56851995f,
      -0.803049982f, -2.59678006f,  0.768779993f,  -0.472449988f},
     "00b2a666c5bf70c2546cbdb619234d77238d48e2c23f"},
    {"random",
     {-1.65465999f,   -0.447030008f, 0.00696999999f, 0.660589993f, 0.154420003f,  -1.11611998f,  -0.191080004f,
      0.09595f,       0.162829995f,  -1.54867005f,   0.893270016f, -0.730610013f, 0.827409983f,  -0.871850014f,
      -0.0783500001f, 0.976409972f,  -0.93554002f,   0.279300004f, -0.218950003f, -0.202150002f, 0.38409999f,
      -0.471520007f,  -0.630259991f, 0.254579991f,   0.437449992f, 0.233429998f,  -1.98791003f,  0.0862800032f,
      -0.160779998f,  -0.41881001f,  -0.0527600013f, 0.235699996f},
     "f42f9c9592cb832ce0e531c7be214124071af7d90f28"},
};

TEST(KvFormatQ5_0, BlocksMatchLlamaCppReference) {
  for (const Golden& g : kGolden) {
    uint8_t out[22];  // one block
    Q5_0Codec().quantize(g.x, out, 32, CodecParams{});
    EXPECT_EQ(block_test::ToHex(out, sizeof out), g.hex) << g.name;
  }
}

TEST(KvFormatQ5_0, LayoutAndBitsPerElement) {
  const RowCodec& c = Q5_0Codec();
  EXPECT_EQ(c.name, "q5_0");
  EXPECT_EQ(c.block_elems, 32);
  EXPECT_EQ(c.bits_per_element(128, CodecParams{}), 5.5);  // 22 B per 32 elements
  EXPECT_EQ(c.row_bytes(64, CodecParams{}), 2u * 22);
  EXPECT_EQ(c.row_bytes(128, CodecParams{}), 4u * 22);
}

// Bands are ~1.3x the measured relative RMS error (measured: Gaussian 0.0428; outlier rows, ordinary channels 0.572).
TEST(KvFormatQ5_0, RoundTripErrorGaussian) {
  const double err = block_test::RoundTripRelRms(Q5_0Codec(), block_test::Gaussian(256 * 128, 11), 128);
  std::printf("q5_0 gaussian rel-rms %.5f\n", err);
  EXPECT_LT(err, 0.056);
}

// Three channels per row 50x larger than the rest (outlier channels of real keys): the error on
// the ordinary channels that share a block with an outlier, relative to their own energy.
TEST(KvFormatQ5_0, RoundTripErrorOutlierChannels) {
  const std::vector<float> x = block_test::GaussianWithOutliers(256, 128, 12);
  const double all = block_test::RoundTripRelRms(Q5_0Codec(), x, 128);
  const double ordinary = block_test::RoundTripRelRms(Q5_0Codec(), x, 128, /*ordinary_only=*/true);
  std::printf("q5_0 outlier rows: rel-rms all %.5f, ordinary channels %.5f\n", all, ordinary);
  EXPECT_LT(ordinary, 0.74);
}

TEST(KvFormatQ5_0, DotAndAxpySimdMatchScalarReference) {
  codec_checks::ForEachPath([] { block_test::CheckDotAndAxpy(Q5_0Codec(), Q5_0CodecRef()); });
}

}  // namespace
}  // namespace kvaudit
